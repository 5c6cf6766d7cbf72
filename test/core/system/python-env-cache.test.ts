import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync} from 'node:fs';
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

  test('an interpreter that is a script (a pyenv shim) is asked every time, never kept', () => {
    const shim = join(dir, 'bin', 'python3');
    mkdirSync(dirname(shim));
    writeFileSync(shim, `#!/bin/sh\nexec ${PYTHON_EXE} "$@"\n`);
    chmodSync(shim, 0o755);
    const cacheDir = join(dir, 'cache');
    inspectPythonCached({env: {...env(), PATH: dirname(shim)}, cwd: dir, cacheDir});
    expect(existsSync(join(cacheDir, 'python-env.json'))).toBe(false);
  });

  /**
   * Counts the interpreter's starts without strace or a wrapper (the cache refuses a script): a
   * sitecustomize.py on PYTHONPATH, which every start of python3 imports, appends a line to a log.
   */
  function counted(): {cwd: string; cacheDir: string; starts: () => number; ask: () => {sitePackages: string[]; executable: string | null}} {
    const sp = join(dir, 'sp');
    const log = join(dir, 'log', 'starts');
    mkdirSync(sp);
    mkdirSync(dirname(log));
    writeFileSync(log, '');
    writeFileSync(join(sp, 'sitecustomize.py'), `with open(${JSON.stringify(log)}, "a") as f:\n    f.write("started\\n")\n`);
    const cwd = join(dir, 'proj');
    mkdirSync(cwd);
    const cacheDir = join(dir, 'cache');
    mkdirSync(cacheDir);
    const e = {...env(), PYTHONNOUSERSITE: '1'};
    return {
      cwd, cacheDir,
      starts: () => readFileSync(log, 'utf8').split('\n').filter(Boolean).length,
      // The answer (a miss also says what it watches).
      ask: () => {
        const {sitePackages, executable} = inspectPythonCached({env: e, python: PYTHON_EXE!, cwd, cacheDir});
        return {sitePackages, executable};
      },
    };
  }

  test('files created in the working directory ask no python3 again, unless `import torch` or `import nvidia` would take them', () => {
    const {cwd, starts, ask} = counted();
    const first = ask();
    expect(starts()).toBe(1);
    expect(first.sitePackages).not.toContain(cwd);
    expect(ask()).toEqual(first);
    expect(starts()).toBe(1);
    // An editor's swap file, a build output, names that only look like torch's: the cwd's mtime
    // changes, the answer cannot.
    writeFileSync(join(cwd, '.main.py.swp'), '');
    mkdirSync(join(cwd, 'build'));
    mkdirSync(join(cwd, 'torchvision'));
    writeFileSync(join(cwd, 'torch.txt'), '');
    writeFileSync(join(cwd, 'torch.cpython-19-x86_64-linux-gnu.so'), '');
    mkdirSync(join(cwd, 'torch.py'));
    rmSync(join(cwd, '.main.py.swp'));
    expect(ask()).toEqual(first);
    expect(starts()).toBe(1);
    rmSync(join(cwd, 'torch.py'), {recursive: true});

    // A torch/ directory with no __init__ (a namespace portion: torch is not found there): asked again.
    mkdirSync(join(cwd, 'torch'));
    expect(ask()).toEqual(first);
    expect(starts()).toBe(2);
    // Made a package: `import torch` in this directory takes it.
    writeFileSync(join(cwd, 'torch', '__init__.py'), '');
    const shadowed = ask();
    expect(starts()).toBe(3);
    expect(shadowed.sitePackages[0]).toBe(cwd);
    // Files inside the package change nothing; the answer is kept.
    writeFileSync(join(cwd, 'torch', 'version.py'), '');
    expect(ask()).toEqual(shadowed);
    expect(starts()).toBe(3);
    // Replaced by another directory (a checkout moved into place): asked again.
    const other = join(dir, 'torch-other');
    mkdirSync(other);
    writeFileSync(join(other, '__init__.py'), '');
    renameSync(join(cwd, 'torch'), join(dir, 'torch-old'));
    renameSync(other, join(cwd, 'torch'));
    expect(ask().sitePackages[0]).toBe(cwd);
    expect(starts()).toBe(4);
    // Removed: the installed answer again.
    rmSync(join(cwd, 'torch'), {recursive: true});
    expect(ask()).toEqual(first);
    expect(starts()).toBe(5);
    // A module torch.py: found in the working directory.
    writeFileSync(join(cwd, 'torch.py'), '');
    expect(ask().sitePackages[0]).toBe(cwd);
    expect(starts()).toBe(6);
    rmSync(join(cwd, 'torch.py'));
    // A symlink named nvidia to a directory: a namespace portion of nvidia there.
    mkdirSync(join(dir, 'wheels', 'nvidia', 'cublas', 'lib'), {recursive: true});
    symlinkSync(join(dir, 'wheels', 'nvidia'), join(cwd, 'nvidia'));
    expect(ask().sitePackages).toContain(cwd);
    expect(starts()).toBe(7);
    expect(ask().sitePackages).toContain(cwd);
    expect(starts()).toBe(7);
  });

  test('a package installed in a sys.path directory asks again; an old cache file is a miss', () => {
    const {cacheDir, starts, ask} = counted();
    const first = ask();
    mkdirSync(join(dir, 'sp', 'torch'));
    writeFileSync(join(dir, 'sp', 'torch', '__init__.py'), '');
    expect(ask().sitePackages[0]).toBe(join(dir, 'sp'));
    expect(starts()).toBe(2);
    expect(ask().sitePackages[0]).toBe(join(dir, 'sp'));
    expect(starts()).toBe(2);
    // Format 1 watched the working directory's mtime: its entries are not read.
    const file = join(cacheDir, 'python-env.json');
    const data = JSON.parse(readFileSync(file, 'utf8')) as {format: number; entries: unknown[]};
    writeFileSync(file, JSON.stringify({...data, format: 1}));
    ask();
    expect(starts()).toBe(3);
    expect(first.executable).not.toBeNull();
  });

  test('a verdict on the interpreter binary (check\'s dynamicProgram) is kept with the answer: asked once', () => {
    const {cwd, cacheDir, starts} = counted();
    const e = {...env(), PYTHONNOUSERSITE: '1'};
    const asked: string[] = [];
    const program = (path: string): string | null => {
      asked.push(path);
      return `verdict on ${path}`;
    };
    // Written without one (as doctor and the check after a switch write it): added at the next hit.
    const plain = inspectPythonCached({env: e, python: PYTHON_EXE!, cwd, cacheDir});
    expect(plain.program).toBeUndefined();
    expect(plain.executable).not.toBeNull();
    const exe = plain.executable!;
    expect(inspectPythonCached({env: e, python: PYTHON_EXE!, cwd, cacheDir, program}).program).toBe(`verdict on ${exe}`);
    expect(asked).toEqual([exe]);
    expect(inspectPythonCached({env: e, python: PYTHON_EXE!, cwd, cacheDir, program}).program).toBe(`verdict on ${exe}`);
    expect(asked).toEqual([exe]);
    expect(starts()).toBe(1);
    // A miss asks it with the interpreter; the hits after it do not.
    mkdirSync(join(cwd, 'nvidia'));
    expect(inspectPythonCached({env: e, python: PYTHON_EXE!, cwd, cacheDir, program}).program).toBe(`verdict on ${exe}`);
    expect(inspectPythonCached({env: e, python: PYTHON_EXE!, cwd, cacheDir, program}).program).toBe(`verdict on ${exe}`);
    expect(starts()).toBe(2);
    expect(asked).toEqual([exe, exe]);
    // Without a cache (--no-cache) nothing is said: the caller asks.
    expect(inspectPythonCached({env: e, python: PYTHON_EXE!, cwd, program}).program).toBeUndefined();
  });

  test('a json.py or re.py in the working directory neither breaks nor changes the answer', () => {
    const {cwd, starts, ask} = counted();
    const clean = ask();
    expect(starts()).toBe(1);
    for (const name of ['json.py', 're.py', 'importlib.py']) writeFileSync(join(cwd, name), 'raise SystemExit("shadowed")\n');
    rmSync(join(dir, 'cache', 'python-env.json'));
    expect(ask()).toEqual(clean);
    expect(starts()).toBe(2);
    expect(clean.executable).not.toBeNull();
  });

  testIf(CAN_PTRACE, 'needs strace and ptrace (apt-get install strace)')('the second check of an unchanged environment starts no python3, nor one after a file is created in its working directory (strace)', () => {
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
    // A file created in the working directory it asks for (`dir`): still none.
    writeFileSync(join(dir, 'notes.txt'), '');
    expect(run().status).toBe(0);
    expect(execs()).toBe(0);
  });
});
