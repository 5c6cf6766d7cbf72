#!/usr/bin/env node
// The hot commands (`--version`, `current`) skip oclif: loading it costs more than
// the whole command, and the shell hook and users call them often.
import {fastPath} from '../dist/fast-path.js';

if (!(await fastPath(process.argv.slice(2)))) {
  const {execute} = await import('@oclif/core');
  await execute({dir: import.meta.url});
}
