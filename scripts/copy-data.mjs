#!/usr/bin/env node
// tsc copies no data files: the release table is read at run time next to the compiled module.
import {copyFileSync, mkdirSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const file of ['core/versions/releases.json']) {
  mkdirSync(dirname(join(root, 'dist', file)), {recursive: true});
  copyFileSync(join(root, 'src', file), join(root, 'dist', file));
}
