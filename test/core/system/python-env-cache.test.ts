import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {inspectPythonCached} from '../../../src/core/system/python-env-cache.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {CAN_PTRACE, PYTHON_EXE} from '../../helpers/capabilities.js';

const here = dirname(fileURLToPath(import.meta.url));
let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
});
afterEach(() => cleanup());

describeIf(PYTHON_EXE !== null, 'needs python3')('the Python environment, kept under the interpreter\'s identity', () => {
  const env = () => ({PATH: dirname(PYTHON_EXE!), HOME: dir, PYTHONPATH: join(dir, 'sp')});

  test('an unchanged environment answers from the cache; a package installed on sys.path asks again', () => {
    mkdirSync(join(dir, 'sp'));
    // Not in the working directory, which is on sys.path ('' for python3 -c): a new entry there asks again.
    const cacheDir = join(dir, 'sp-cache', 'cache');
    mkdirSync(cacheDir, {recursive: true});
    const first = inspectPythonCached({env: env(), python: PYTHON_EXE!, cwd: dir, cacheDir});
    expect(first.sitePackages).not.toContain(join(dir, 'sp'));
    expect(JSON.parse(readFileSync(join(cacheDir, 'python-env.json'), 'utf8')).entries).toHaveLength(1);
    expect(inspectPythonCached({env: env(), python: PYTHON_EXE!, cwd: dir, cacheDir})).toEqual({sitePackages: first.sitePackages, executable: first.executable});
    // pip install torch: a new entry in a sys.path directory.
    mkdirSync(join(dir, 'sp', 'torch'));
    writeFileSync(join(dir, 'sp', 'torch', '__init__.py'), '');
    expect(inspectPythonCached({env: env(), python: PYTHON_EXE!, cwd: dir, cacheDir}).sitePackages[0]).toBe(join(dir, 'sp'));
  });

  test('an interpreter that is a script (a pyenv shim) is asked every time, never kept', () => {
    const shim = join(dir, 'bin', 'python3');
    mkdirSync(dirname(shim));
    writeFileSync(shim, `#!/bin/sh\nexec ${PYTHON_EXE} "$@"\n`);
    chmodSync(shim, 0o755);
    const cacheDir = join(dir, 'cache');
    inspectPythonCached({env: {...env(), PATH: dirname(shim)}, cwd: dir, cacheDir});
    expect(existsSync(join(cacheDir, 'python-env.json'))).toBe(false);
  });

  testIf(CAN_PTRACE, 'needs strace and ptrace (apt-get install strace)')('the second check of an unchanged environment starts no python3 (strace)', () => {
    mkdirSync(join(dir, 'sp'));
    const script = join(here, 'python-env-cache.run.mjs');
    mkdirSync(join(dir, 'cache'));
    const run = () => spawnSync('strace', ['-f', '-qq', '-e', 'trace=execve', '-o', join(dir, 'trace'), process.execPath, script, PYTHON_EXE!, dir], {encoding: 'utf8', env: {...process.env, ...env(), PATH: `${dirname(PYTHON_EXE!)}:${process.env.PATH}`}});
    const execs = () => readFileSync(join(dir, 'trace'), 'utf8').split('\n').filter((l) => l.includes('execve(') && !l.includes(process.execPath)).length;
    const r1 = run();
    expect(r1.error?.message ?? r1.stderr).toBe('');
    expect(r1.status).toBe(0);
    expect(execs()).toBe(1);
    expect(run().status).toBe(0);
    expect(execs()).toBe(0);
  });
});
