import {expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {REPO} from './run-action.js';

// The usual check-dist practice: an action runs its committed bundle, so the bundle must be
// exactly what the sources build (run `npm run build:action` and commit dist-action/ when this fails).
test('dist-action/index.mjs is what the sources build, byte for byte', () => {
  const r = spawnSync(process.execPath, [join(REPO, 'scripts', 'build-action.mjs'), '--check'], {cwd: REPO, encoding: 'utf8'});
  expect(r.stderr).toBe('');
  expect(r.stdout).toBe('dist-action/index.mjs matches the sources.\n');
  expect(r.status).toBe(0);
});
