import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {readFileSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {buildLib, HAVE_GCC} from '../core/elf/fixtures.js';
import {makeStore} from '../core/shell/shell-harness.js';
import {cliEnv, REPO_ROOT, runCliProbed, runCliThroughOclif} from '../helpers/cli.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';

/**
 * What shells start skips oclif (src/fast-path.ts): `cudaenv switch-check LABEL`, which the hook runs
 * after a switch whose check is not cached (a `cd` into a project), and `cudaenv init SHELL`, the rc
 * line's fallback (and every new shell's, for those who eval it). What each prints, writes and how it
 * exits must be exactly what the oclif command does with the same arguments and store.
 */

describeIf(HAVE_GCC, 'needs gcc (apt-get install gcc)')('cudaenv switch-check LABEL: fast path = oclif command', () => {
  let tmp: {dir: string; cleanup: () => void};
  let env: NodeJS.ProcessEnv;
  let store: string;

  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-switch-check-fast-');
    store = join(tmp.dir, 'store');
    const paths = await makeStore(store, ['12.4.1', '11.8.0']);
    // 12.4.1's library needs one its lib64 lacks: the line names it; 11.8.0's resolves.
    const dep = buildLib({out: join(tmp.dir, 'elsewhere', 'libdep.so.1'), soname: 'libdep.so.1', source: 'int dep(void){return 1;}\n'});
    buildLib({out: join(paths.versions, '12.4.1', 'lib64', 'libcudart.so.12'), soname: 'libcudart.so.12', source: 'int dep(void);\nint r(void){return dep();}\n', link: [dep]});
    buildLib({out: join(paths.versions, '11.8.0', 'lib64', 'libcudart.so.11.0'), soname: 'libcudart.so.11.0', source: 'int r(void){return 0;}\n'});
    env = cliEnv(store, {HOME: tmp.dir, PATH: '/usr/bin:/bin'});
    delete env.LD_LIBRARY_PATH;
    delete env.LD_PRELOAD;
  });
  afterAll(() => tmp?.cleanup());

  const cases: Array<[string, string[], number]> = [
    ['a version whose library is not found', ['switch-check', '12.4.1'], 0],
    ['a version whose libraries resolve', ['switch-check', '11.8.0'], 0],
    ['a version that is not installed', ['switch-check', '12.6.0'], 0],
    ['no version label (usage error)', ['switch-check', 'twelve'], 2],
  ];
  describe.each(cases)('%s', (_name, args, status) => {
    test('same output and exit status, without loading oclif; cached the second time as the first', () => {
      // oclif first: it checks and caches; the fast path then answers from that cache, and again after the cache is gone.
      const slow = runCliThroughOclif(args, env);
      const cached = runCliProbed(args, env, tmp.dir);
      spawnSync('sh', ['-c', `rm -f '${join(store, 'switch')}'/check-*`]);
      const fresh = runCliProbed(args, env, tmp.dir);
      for (const fast of [cached, fresh]) {
        expect({status: fast.status, stdout: fast.stdout, stderr: fast.stderr}).toEqual(slow);
        expect(fast.oclif).toBe(false);
      }
      expect(slow.status).toBe(status);
      if (status === 0) expect(slow.stderr).toMatch(/^cudaenv: /);
    });
  });

  test('the check line names what is missing', () => {
    expect(runCliProbed(['switch-check', '12.4.1'], env, tmp.dir).stderr).toContain('libdep.so.1');
  });

  test('--json and anything else go through oclif', () => {
    const r = runCliProbed(['switch-check', '11.8.0', '--json'], env, tmp.dir);
    expect(r.oclif).toBe(true);
    expect(JSON.parse(r.stdout)).toMatchObject({version: '11.8.0'});
  });

  test('a store whose switch/ is a file (the cache cannot be written): the check still runs, as through oclif', () => {
    const other = join(tmp.dir, 'store-broken');
    spawnSync('sh', ['-c', `cp -a '${store}' '${other}' && rm -rf '${other}/switch' && echo x > '${other}/switch'`]);
    const broken = {...env, CUDAENV_DIR: other};
    const slow = runCliThroughOclif(['switch-check', '11.8.0'], broken);
    const fast = runCliProbed(['switch-check', '11.8.0'], broken, tmp.dir);
    expect({status: fast.status, stdout: fast.stdout, stderr: fast.stderr}).toEqual(slow);
    expect(slow).toEqual({status: 0, stdout: '', stderr: 'cudaenv: CUDA 11.8.0: all 1 library resolves\n'});
  });
});

describe('cudaenv init SHELL: fast path = oclif command', () => {
  let tmp: {dir: string; cleanup: () => void};
  let env: NodeJS.ProcessEnv;
  let store: string;

  beforeAll(() => {
    tmp = makeTempDir('cudaenv-init-fast-');
    store = join(tmp.dir, 'store');
    env = cliEnv(store, {HOME: tmp.dir, PATH: '/usr/bin:/bin'});
  });
  afterAll(() => tmp?.cleanup());

  test.each(['bash', 'zsh', 'fish'])('%s: the same shell code and start file, without loading oclif', (shell) => {
    const startFile = join(store, 'shell', `init.${shell}`);
    const slow = runCliThroughOclif(['init', shell], env);
    const slowFile = readFileSync(startFile, 'utf8');
    rmSync(startFile);
    const fast = runCliProbed(['init', shell], env, tmp.dir);
    expect({status: fast.status, stdout: fast.stdout, stderr: fast.stderr}).toEqual(slow);
    expect(readFileSync(startFile, 'utf8')).toBe(slowFile);
    expect(fast.oclif).toBe(false);
    expect(slow.status).toBe(0);
    // The launcher next to the package, as oclif's module names it (the bundle's path is relocated).
    expect(slow.stdout).toContain(`_CUDAENV_BIN${shell === 'fish' ? ' ' : '='}${join(REPO_ROOT, 'bin', 'cudaenv')}`);
  });

  test('a shell it does not know, or a flag, goes through oclif, which explains', () => {
    for (const args of [['init', 'tcsh'], ['init', 'bash', '--help']]) {
      const fast = runCliProbed(args, env, tmp.dir);
      expect(fast.oclif).toBe(true);
      expect({status: fast.status, stdout: fast.stdout, stderr: fast.stderr}).toEqual(runCliThroughOclif(args, env));
    }
  });

  test('a store it cannot write the start file into: the shell code all the same, as through oclif', () => {
    const broken = join(tmp.dir, 'store-file');
    writeFileSync(broken, 'not a directory\n');
    const e = {...env, CUDAENV_DIR: broken};
    const slow = runCliThroughOclif(['init', 'bash'], e);
    const fast = runCliProbed(['init', 'bash'], e, tmp.dir);
    expect({status: fast.status, stdout: fast.stdout, stderr: fast.stderr}).toEqual(slow);
    expect(slow.status).toBe(0);
    expect(slow.stdout).toContain('_cudaenv_switch');
  });
});

