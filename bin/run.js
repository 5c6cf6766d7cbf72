#!/usr/bin/env node
// The hot commands (`--version`, `current`, and `check PATH...` without flags) skip oclif:
// loading it costs more than the whole command, and the shell hook and users call them often.
import {fileURLToPath} from 'node:url';
import {installLastResort} from '../dist/cli/last-resort.js';
import {fastPath} from '../dist/fast-path.js';

installLastResort(); // an exception nothing caught: one line, exit 1, locks and staging cleaned up

if (!(await fastPath(process.argv.slice(2)))) {
  const {execute} = await import('@oclif/core');
  // cudaenv has no plugins: skip oclif's user-plugin lookup, which reads (and on an
  // unwritable HOME warns about) ~/.local/share/cudaenv/package.json at every start.
  const root = fileURLToPath(new URL('..', import.meta.url));
  await execute({dir: import.meta.url, loadOptions: {root, userPlugins: false}});
}
