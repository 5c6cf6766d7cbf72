import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, REPO_ROOT} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';

// bin/run.cjs loads the bundled fast path and falls back to dist/start.js, so a bundle that
// failed to load would only make every `use` slower: these tests make that visible.
const BUNDLE = join(REPO_ROOT, 'dist', 'fast-path.bundle.cjs');
const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {version: string}).version;

let dir: string;
let cleanup: () => void;
let probe: string;
beforeAll(() => {
  ({dir, cleanup} = makeTempDir('cudaenv-bundle-'));
  // Written at exit: the internal modules Node loaded. An ES module run needs esm/module_job (the
  // public 'module' builtin, which the bundle requires for createRequire, loads esm/loader alone).
  probe = join(dir, 'modules.cjs');
  writeFileSync(probe, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(join(dir, 'loaded.txt'))}, process.moduleLoadList.join('\\n')));\n`);
});
afterAll(() => cleanup());

test('the build writes the bundle, and it loads on its own', () => {
  expect(existsSync(BUNDLE)).toBe(true);
  const r = spawnSync(process.execPath, ['-e', `const m = require(${JSON.stringify(BUNDLE)}); process.stdout.write(typeof m.fastPath + ' ' + typeof m.installLastResort);`], {encoding: 'utf8'});
  expect(r.stderr).toBe('');
  expect(r.stdout).toBe('function function');
});

test('data read relative to a module is read relative to the bundle (shims/, the launcher, the release table)', () => {
  const text = readFileSync(BUNDLE, 'utf8');
  expect(text).not.toContain('../../../shims/');
  expect(text).toContain('../shims/');
  expect(text).not.toContain('import.meta');
  // init's launcher path (src/core/self/installation.ts), relative to dist/ in the bundle.
  expect(text).not.toContain('../../../bin/cudaenv');
  expect(text).toContain('../bin/cudaenv');
  // The release table is not on the fast path today; if it comes onto it, it must be relocated too.
  if (text.includes('releases.json')) expect(text).toContain('./core/versions/releases.json');
});

test('the launcher runs the bundle: --version through it names the package version', () => {
  const r = spawnSync(join(REPO_ROOT, 'bin', 'cudaenv'), ['--version'], {encoding: 'utf8'});
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(new RegExp(`^cudaenv/${VERSION.replaceAll('.', '\\.')} `));
});

test('the fast path starts without Node\'s ES module loader; oclif\'s commands still load it', () => {
  const env = {PATH: process.env.PATH, HOME: dir, CUDAENV_DIR: join(dir, 'store'), CUDAENV_SHELL: 'bash'};
  const loaded = (args: string[]): {status: number | null; stdout: string; esm: boolean} => {
    const r = spawnSync(process.execPath, ['-r', probe, CLI, ...args], {encoding: 'utf8', env});
    const list = readFileSync(join(dir, 'loaded.txt'), 'utf8');
    return {status: r.status, stdout: r.stdout, esm: list.includes('internal/modules/esm/module_job')};
  };
  // `use system` and `current` answer from the store (an empty one here); --version from package.json.
  for (const args of [['--version'], ['current'], ['use', 'system']]) {
    const r = loaded(args);
    expect([args.join(' '), r.esm]).toEqual([args.join(' '), false]);
    expect(r.stdout.length).toBeGreaterThan(0);
  }
  // The control: the probe does see the loader when a command goes through oclif.
  const ls = loaded(['ls']);
  expect(ls.status).toBe(0);
  expect(ls.esm).toBe(true);
});

test('bin/run.js (the README\'s ./bin/run.js) runs the same entry', () => {
  const r = spawnSync(join(REPO_ROOT, 'bin', 'run.js'), ['--version'], {encoding: 'utf8'});
  expect(r.status).toBe(0);
  expect(r.stdout).toMatch(new RegExp(`^cudaenv/${VERSION.replaceAll('.', '\\.')} `));
});

test('without the bundle (a build whose bundling step failed) bin/run.cjs runs the modules it is made of', () => {
  // A copy of the package's layout with every dist/ entry but the bundle linked in.
  const tree = join(dir, 'nobundle');
  for (const sub of ['bin', 'dist']) mkdirSync(join(tree, sub), {recursive: true});
  copyFileSync(CLI, join(tree, 'bin', 'run.cjs'));
  for (const name of ['package.json', 'shims', 'node_modules', 'oclif.manifest.json']) symlinkSync(join(REPO_ROOT, name), join(tree, name));
  for (const name of readdirSync(join(REPO_ROOT, 'dist'))) {
    if (!name.startsWith('fast-path.bundle')) symlinkSync(join(REPO_ROOT, 'dist', name), join(tree, 'dist', name));
  }
  const env = {PATH: process.env.PATH, HOME: dir, CUDAENV_DIR: join(dir, 'store-nobundle')};
  const version = spawnSync(process.execPath, [join(tree, 'bin', 'run.cjs'), '--version'], {encoding: 'utf8', env});
  expect(version.stderr).toBe('');
  expect(version.stdout).toMatch(new RegExp(`^cudaenv/${VERSION.replaceAll('.', '\\.')} `));
  // And a command through oclif from there.
  const ls = spawnSync(process.execPath, [join(tree, 'bin', 'run.cjs'), 'ls'], {encoding: 'utf8', env});
  expect(ls.status).toBe(0);
  expect(ls.stdout).toContain('No CUDA versions installed');
});
