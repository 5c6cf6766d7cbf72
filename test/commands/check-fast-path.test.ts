import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {cpSync, mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {buildLib, HAVE_GCC} from '../core/elf/fixtures.js';
import {cliEnv, REPO_ROOT, runCli, runCliProbed, runCliThroughOclif} from '../helpers/cli.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {makeTempDir} from '../helpers/tmp.js';
import {describeIf} from '../helpers/skip.js';

/**
 * `cudaenv check PATH...` without flags skips oclif (src/fast-path.ts). Whatever it prints and
 * however it exits must be exactly what the oclif command does with the same arguments.
 */
const d = describeIf(HAVE_GCC, 'needs gcc (apt-get install gcc)');

d('cudaenv check PATH... without flags: fast path = oclif command', () => {
  let tmp: {dir: string; cleanup: () => void};
  let env: NodeJS.ProcessEnv;
  let ok: string;
  let broken: string;

  beforeAll(() => {
    tmp = makeTempDir('cudaenv-check-fast-');
    ok = join(tmp.dir, 'ok');
    const dep = buildLib({out: join(ok, 'libdep.so.1'), soname: 'libdep.so.1', source: 'int dep(void){return 1;}\n',
      versionScript: 'DEP_1 { global: dep; local: *; };\n'});
    buildLib({out: join(ok, 'libuser.so'), source: 'int dep(void);\nint user(void){return dep();}\n', link: [dep], runpath: '$ORIGIN'});
    writeFileSync(join(ok, 'libc.so'), '/* GNU ld script */\nGROUP ( libc.so.6 )\n');
    buildLib({out: join(ok, 'plugin.so'), source: 'extern int lua_gettop(void*); int p(void*L){return lua_gettop(L);}\n'});
    // libuser linked against a libdep that is then replaced by one without DEP_1 and dep.
    broken = join(tmp.dir, 'broken');
    const dep2 = buildLib({out: join(broken, 'libdep.so.1'), soname: 'libdep.so.1', source: 'int dep(void){return 1;}\n',
      versionScript: 'DEP_1 { global: dep; local: *; };\n'});
    buildLib({out: join(broken, 'libuser.so'), source: 'int dep(void);\nint user(void){return dep();}\n', link: [dep2], runpath: '$ORIGIN'});
    buildLib({out: join(broken, 'libdep.so.1'), soname: 'libdep.so.1', source: 'int other(void){return 1;}\n'});
    buildLib({out: join(broken, 'libneedsgone.so'), source: 'int dep(void);\nint g(void){return dep();}\n', link: [dep2], runpath: '/nonexistent'});
    mkdirSync(join(tmp.dir, 'empty'));
    writeFileSync(join(tmp.dir, 'notes.txt'), 'not a library\n');
    env = cliEnv(join(tmp.dir, 'store'));
    delete env.LD_LIBRARY_PATH;
    delete env.LD_PRELOAD;
  });
  afterAll(() => tmp?.cleanup());

  const cases: Array<[string, (t: {tmp: string; ok: string; broken: string}) => string[], number]> = [
    ['a clean directory (linker script and plugin notes)', (t) => ['check', t.ok], 0],
    ['two directories and a file', (t) => ['check', t.ok, t.broken, join(t.ok, 'libuser.so')], 1],
    ['missing symbol version and a library not found', (t) => ['check', t.broken], 1],
    ['a directory without shared objects (warning)', (t) => ['check', join(t.tmp, 'empty')], 0],
    ['a missing path (usage error)', (t) => ['check', join(t.tmp, 'nope')], 2],
    ['a file that is not ELF (usage error)', (t) => ['check', join(t.tmp, 'notes.txt')], 2],
    ['"help" and "version" as paths', () => ['check', 'help', 'version'], 2],
  ];

  test.each(cases)('%s', (_name, args, status) => {
    const argv = args({tmp: tmp.dir, ok, broken});
    const fast = runCli(argv, {env});
    const oclif = runCliThroughOclif(argv, env);
    expect(fast.status).toBe(status);
    expect(fast).toEqual(oclif);
  });

  // Issue 42: the import model (`--exe`) and `check` without PATH skip oclif too.
  test.each([
    ['--exe PROGRAM before the paths', (t: {ok: string; broken: string; exe: string}) => ['check', '--exe', t.exe, t.ok, t.broken]],
    ['--exe=PROGRAM after a path', (t: {ok: string; broken: string; exe: string}) => ['check', t.ok, `--exe=${t.exe}`]],
    ['--exe with --gpu and --no-cache', (t: {ok: string; broken: string; exe: string}) => ['check', '--no-cache', '--exe', t.exe, t.ok, '--gpu', '8.6']],
  ])('%s: fast path = oclif command, and oclif is not loaded', (_name, args) => {
    const argv = args({ok, broken, exe: process.execPath});
    const fast = runCliProbed(argv, env, tmp.dir);
    expect(fast.oclif).toBe(false);
    const {oclif: _loaded, ...plain} = fast;
    expect(plain).toEqual(runCliThroughOclif(argv, env));
  });

  test('without PATH (the active version and the Python environment): fast path = oclif command, oclif not loaded', () => {
    const toolkit = makeFakeToolkit(join(tmp.dir, 'tk'), {version: '12.4.1'});
    cpSync(join(ok, 'libuser.so'), join(toolkit, 'lib64', 'libuser.so'));
    expect(runCli(['add', toolkit], {env}).status).toBe(0);
    for (const e of [{...env, CUDAENV_VERSION: '12.4.1'}, {...env, CUDAENV_VERSION: '12.4.1', PATH: `${tmp.dir}/nopython:/usr/bin:/bin`}]) {
      for (const argv of [['check'], ['check', '--no-cache'], ['check', '--exe', process.execPath]]) {
        const fast = runCliProbed(argv, e, tmp.dir);
        expect(fast.oclif).toBe(false);
        const {oclif: _loaded, ...plain} = fast;
        expect(plain).toEqual(runCliThroughOclif(argv, e));
        expect(plain.stdout).toContain(`checking CUDA 12.4.1 (set by CUDAENV_VERSION): ${join(tmp.dir, 'store', 'versions', '12.4.1', 'lib64')}`);
      }
    }
  });

  test('--exe without a value, or twice, goes to oclif, which explains it', () => {
    for (const argv of [['check', ok, '--exe'], ['check', '--exe', process.execPath, '--exe', process.execPath, ok]]) {
      const fast = runCliProbed(argv, env, tmp.dir);
      expect(fast.oclif).toBe(true);
      expect(fast.status).toBe(2);
    }
  });

  test('with LD_LIBRARY_PATH set, and set to empty', () => {
    for (const value of [join(tmp.dir, 'broken'), '']) {
      const e = {...env, LD_LIBRARY_PATH: value};
      const argv = ['check', join(ok, 'libuser.so')];
      expect(runCli(argv, {env: e})).toEqual(runCliThroughOclif(argv, e));
    }
    // The broken libdep first on the path breaks libuser: the variable is honoured on the fast path.
    expect(runCli(['check', join(ok, 'libuser.so')], {env: {...env, LD_LIBRARY_PATH: join(tmp.dir, 'broken')}}).status).toBe(1);
  });

  test('output to a closed pipe is not an error', () => {
    const r = spawnSync('bash', ['-c', `set -o pipefail; node ${JSON.stringify(join(REPO_ROOT, 'bin', 'run.cjs'))} check ${JSON.stringify(ok)} ${JSON.stringify(broken)} | head -c 1 >/dev/null; echo "status \${PIPESTATUS[0]}"`],
      {env, encoding: 'utf8'});
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toMatch(/^status [01]$/);
  });
});
