import {expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';

// bin/run.js loads the bundled fast path and falls back to dist/fast-path.js, so a bundle that
// failed to load would only make every `use` slower: these tests make that visible.
const BUNDLE = join(REPO_ROOT, 'dist', 'fast-path.bundle.js');

test('the build writes the bundle, and it loads on its own', () => {
  expect(existsSync(BUNDLE)).toBe(true);
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(BUNDLE)}); process.stdout.write(typeof m.fastPath);`], {encoding: 'utf8'});
  expect(r.stderr).toBe('');
  expect(r.stdout).toBe('function');
});

test('data read relative to a module is read relative to the bundle (shims/, the release table)', () => {
  const text = readFileSync(BUNDLE, 'utf8');
  expect(text).not.toContain('../../../shims/');
  expect(text).toContain('../shims/');
  // The release table is not on the fast path today; if it comes onto it, it must be relocated too.
  if (text.includes('releases.json')) expect(text).toContain('./core/versions/releases.json');
});

test('the launcher runs the bundle: --version through it names the package version', () => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {version: string};
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(BUNDLE)}); await m.fastPath(['--version']);`], {encoding: 'utf8'});
  expect(r.stdout).toMatch(new RegExp(`^cudaenv/${pkg.version.replaceAll('.', '\\.')} `));
});
