#!/usr/bin/env node
// The CLI as an ES module path, for `./bin/run.js COMMAND` from a clone (the README's quick start)
// and whatever started it this way before: it runs bin/run.cjs, the entry bin/cudaenv starts.
import './run.cjs';
