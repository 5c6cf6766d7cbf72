import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {chmodSync, existsSync, mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {buildLib, HAVE_GCC} from '../core/elf/fixtures.js';
import {cliEnv, runCli, runCliThroughOclif} from '../helpers/cli.js';
import {makeTempDir, type TempDir} from '../helpers/tmp.js';
import {describeIf} from '../helpers/skip.js';
import {PYTHON_EXE} from '../helpers/capabilities.js';

/**
 * Issue 44, item 8: the README's `check ext.so --exe "$(command -v python3)"` on a pyenv (asdf, mise)
 * machine names a shim, a shell script: cudaenv checks as the interpreter the shim runs here, and says so.
 */
describeIf(HAVE_GCC && PYTHON_EXE !== null, 'needs gcc and python3')('check --exe with a pyenv-style shim', () => {
  let tmp: TempDir;
  let ext: string;
  let shim: string;
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-exe-shim-');
    // An extension module that uses the interpreter's own symbols, as a CPython extension does.
    ext = buildLib({out: join(tmp.dir, 'ext.so'), source: 'extern int Py_IsInitialized(void);\nint f(void){return Py_IsInitialized();}\n'});
    mkdirSync(join(tmp.dir, 'shims'));
    shim = join(tmp.dir, 'shims', 'python3');
    // pyenv's shims are bash scripts that exec the version's binary; this one does the same.
    writeFileSync(shim, `#!/usr/bin/env bash\nset -e\nexec ${JSON.stringify(PYTHON_EXE)} "$@"\n`);
    chmodSync(shim, 0o755);
  });
  afterAll(() => tmp?.cleanup());

  test('the README line as written, with the shim first on PATH: checked as the real interpreter, one line saying so; fast path = oclif', () => {
    const env = cliEnv(join(tmp.dir, 'store'), {PATH: `${join(tmp.dir, 'shims')}:${process.env.PATH}`});
    const r = runCli(['check', ext, '--exe', shim], {env});
    expect(r.stderr).toContain(`cudaenv: warning: --exe ${shim} is a script (a pyenv, asdf or mise shim): checked as the interpreter it runs here, `);
    expect(r.status).toBe(0);
    const direct = runCli(['check', ext, '--exe', PYTHON_EXE!], {env});
    expect(r.stdout).toBe(direct.stdout);
    expect(r).toEqual(runCliThroughOclif(['check', ext, '--exe', shim], env));
  });

  test('a script not named python* is not run: refused as before', () => {
    const other = join(tmp.dir, 'shims', 'tool');
    writeFileSync(other, '#!/bin/sh\necho ran > "$0.ran"\n');
    chmodSync(other, 0o755);
    const r = runCli(['check', ext, '--exe', other], {env: cliEnv(join(tmp.dir, 'store'))});
    expect(r.status).not.toBe(0);
    expect(r.stderr).not.toContain('is a script (a pyenv');
    expect(existsSync(`${other}.ran`)).toBe(false);
  });
});
