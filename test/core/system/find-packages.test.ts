import {afterEach, beforeEach, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {findSitePackages, firstOnPath, pythonCudaLibDirs} from '../../../src/core/system/python-env.js';
import {cliEnv, runCli} from '../../helpers/cli.js';
import {testIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';

// A real interpreter is the oracle: find_spec is asked of it, as doctor and the switch check do.
const PYTHON = firstOnPath(['python3'], '/usr/bin:/bin') ?? firstOnPath(['python3'], process.env.PATH);
const HAVE_PYTHON = !!PYTHON && spawnSync(PYTHON, ['-c', 'import importlib.util'], {stdio: 'ignore'}).status === 0;
const t = testIf(HAVE_PYTHON, 'needs python3 (apt-get install python3)');

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
});
afterEach(() => cleanup());

/** torch and nvidia wheels laid out as pip --target DIR leaves them; importing torch would leave a mark. */
function targetTree(root: string): {torchLib: string; cublasLib: string; mark: string} {
  const mark = join(dir, 'torch-was-imported');
  mkdirSync(join(root, 'torch', 'lib'), {recursive: true});
  writeFileSync(join(root, 'torch', '__init__.py'), `open(${JSON.stringify(mark)}, "w").write("imported")\n`);
  mkdirSync(join(root, 'nvidia', 'cublas', 'lib'), {recursive: true});
  return {torchLib: join(root, 'torch', 'lib'), cublasLib: join(root, 'nvidia', 'cublas', 'lib'), mark};
}

const baseEnv = (extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({PATH: process.env.PATH, HOME: dir, PYTHONNOUSERSITE: '1', ...extra});

t('pip --target DIR on PYTHONPATH: torch and the nvidia wheels are found there, and nothing is imported', () => {
  const target = join(dir, 'target');
  const {torchLib, cublasLib, mark} = targetTree(target);
  const found = findSitePackages({env: baseEnv({PYTHONPATH: target}), python: PYTHON!, cwd: dir});
  expect(found[0]).toBe(target);
  expect(pythonCudaLibDirs(found)).toEqual(expect.arrayContaining([torchLib, cublasLib]));
  expect(existsSync(mark)).toBe(false);
});

t('nvidia wheels split over two trees (a namespace package): both are found', () => {
  const a = join(dir, 'a');
  const b = join(dir, 'b');
  mkdirSync(join(a, 'nvidia', 'cublas', 'lib'), {recursive: true});
  mkdirSync(join(b, 'nvidia', 'cudnn', 'lib'), {recursive: true});
  const found = findSitePackages({env: baseEnv({PYTHONPATH: `${a}:${b}`}), python: PYTHON!, cwd: dir});
  expect(pythonCudaLibDirs(found)).toEqual(expect.arrayContaining([join(a, 'nvidia', 'cublas', 'lib'), join(b, 'nvidia', 'cudnn', 'lib')]));
});

t('PYTHONPATH is honoured even in a virtualenv (the venv shortcut would miss it)', () => {
  const target = join(dir, 'target');
  const {torchLib} = targetTree(target);
  mkdirSync(join(dir, 'venv', 'lib', 'python3.11', 'site-packages'), {recursive: true});
  const found = findSitePackages({env: baseEnv({PYTHONPATH: target, VIRTUAL_ENV: join(dir, 'venv'), PATH: `${join(PYTHON!, '..')}:/usr/bin:/bin`})});
  expect(pythonCudaLibDirs(found)).toContain(torchLib);
});

t('doctor reports torch found through PYTHONPATH', () => {
  const target = join(dir, 'target');
  const {mark} = targetTree(target);
  writeFileSync(join(target, 'torch', 'version.py'), "__version__ = '2.8.0+cu128'\ncuda = '12.8'\n");
  const env = cliEnv(join(dir, 'store'), {PYTHONPATH: target, PYTHONNOUSERSITE: '1', LD_LIBRARY_PATH: ''});
  const r = runCli(['doctor', '--json', '--python', PYTHON!], {env, cwd: dir});
  const facts = JSON.parse(r.stdout).facts;
  expect(facts.python.sitePackages).toContain(target);
  expect(facts.python.torch).toMatchObject({version: '2.8.0+cu128'});
  expect(existsSync(mark)).toBe(false);
});
