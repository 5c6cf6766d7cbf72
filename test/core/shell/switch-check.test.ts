/**
 * The check after a switch, with real ELF libraries built by gcc: the case of a
 * toolkit lib64 on LD_LIBRARY_PATH shadowing a pip wheel's newer library (the wheel's RUNPATH
 * loses to LD_LIBRARY_PATH), reported in one line with the fix, cached per LD_LIBRARY_PATH,
 * and re-checked when a checked directory changes.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync, spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, renameSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {pathsFor} from '../../../src/core/store/paths.js';
import {switchCheck} from '../../../src/core/shell/switch-check.js';
import {planSwitch} from '../../../src/core/shell/transition.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {cliCalls, have, loggingCli, makeStore, runInteractive, writeRc} from './shell-harness.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {CAN_MOUNT_NAMESPACE, NEEDS, PYTHON_EXE} from '../../helpers/capabilities.js';

const canBuild = have('gcc') && have('bash');

function gcc(args: string[], cwd: string): void {
  execFileSync('gcc', args, {cwd, stdio: 'pipe'});
}

describeIf(canBuild, 'needs gcc and bash (apt-get install gcc bash)')('the check after a switch', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  let venv: string;
  let home: string;
  let cli: {bin: string; log: string};

  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-switchcheck-');
    store = join(tmp.dir, 'store');
    const paths = await makeStore(store, ['11.8.0', '12.4.1']);
    const src = join(tmp.dir, 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'dep1.c'), 'int dep_fn(void) { return 1; }\n');
    writeFileSync(join(src, 'v1.map'), 'DEP_1 { global: dep_fn; local: *; };\n');
    writeFileSync(join(src, 'dep2.c'), 'int dep_fn(void) { return 1; }\nint dep_new(void) { return 2; }\n');
    writeFileSync(join(src, 'v2.map'), 'DEP_1 { global: dep_fn; local: *; };\nDEP_2 { global: dep_new; } DEP_1;\n');
    writeFileSync(join(src, 'user.c'), 'int dep_new(void);\nint user_fn(void) { return dep_new(); }\n');
    // The toolkit's libdep.so.1 is older (DEP_1 only); the wheel's has DEP_2.
    const tkLib = join(paths.versions, '11.8.0', 'lib64');
    gcc(['-shared', '-fPIC', '-o', join(tkLib, 'libdep.so.1'), '-Wl,-soname,libdep.so.1', '-Wl,--version-script=v1.map', 'dep1.c'], src);
    venv = join(tmp.dir, 'venv');
    const sp = join(venv, 'lib', 'python3.11', 'site-packages');
    const depLib = join(sp, 'nvidia', 'dep', 'lib');
    const userLib = join(sp, 'nvidia', 'user', 'lib');
    mkdirSync(depLib, {recursive: true});
    mkdirSync(userLib, {recursive: true});
    gcc(['-shared', '-fPIC', '-o', join(depLib, 'libdep.so.1'), '-Wl,-soname,libdep.so.1', '-Wl,--version-script=v2.map', 'dep2.c'], src);
    gcc(['-shared', '-fPIC', '-o', join(userLib, 'libuser.so'), '-Wl,-soname,libuser.so', 'user.c', `-L${depLib}`, '-l:libdep.so.1',
      '-Wl,--enable-new-dtags', '-Wl,-rpath,$ORIGIN/../../dep/lib'], src);
    // The real loader agrees: with the toolkit first on LD_LIBRARY_PATH, libuser.so fails.
    const ldd = spawnSync('ldd', ['-r', join(userLib, 'libuser.so')], {env: {LD_LIBRARY_PATH: tkLib}, encoding: 'utf8'});
    expect(`${ldd.stdout}${ldd.stderr}`).toMatch(/DEP_2.*not found|version `DEP_2' not found/);
    home = join(tmp.dir, 'home');
    mkdirSync(home);
    cli = loggingCli(tmp.dir);
    writeRc('bash', home, {bin: cli.bin});
    mkdirSync(join(tmp.dir, 'proj'));
    writeFileSync(join(tmp.dir, 'proj', '.cuda-version'), '11.8\n');
  });
  afterAll(() => tmp.cleanup());

  test('prepend breaks the wheel: one line names the library and the fix; none resolves', async () => {
    const paths = pathsFor(store);
    const base = {PATH: '/usr/bin:/bin', VIRTUAL_ENV: venv};
    const bad = await switchCheck(paths, '11.8.0', planSwitch(base, store, '11.8.0', 'prepend', 'pin'));
    expect(bad.cached).toBe(false);
    expect(bad.line).toMatch(/^cudaenv: CUDA 11\.8\.0 and the Python environment's CUDA libraries: /);
    expect(bad.line).toContain('libdep.so.1');
    expect(bad.line).toContain('DEP_2');
    expect(bad.line.split('\n')).toHaveLength(1);
    const good = await switchCheck(paths, '11.8.0', planSwitch(base, store, '11.8.0', 'none', 'pin'));
    expect(good.line).toMatch(/all \d+ libraries resolve/);
    // Both results are cached, side by side.
    expect((await switchCheck(paths, '11.8.0', planSwitch(base, store, '11.8.0', 'prepend', 'pin'))).cached).toBe(true);
    expect((await switchCheck(paths, '11.8.0', planSwitch(base, store, '11.8.0', 'none', 'pin'))).cached).toBe(true);
  });

  test('in a real shell: use reports it, the hook reuses the cache, a changed library is checked again', () => {
    writeFileSync(cli.log, '');
    const r1 = runInteractive('bash', home, store, [
      'cudaenv use 11.8',
      'cudaenv use 11.8 --ld-library-path none',
      'cudaenv deactivate',
      `cd '${tmp.dir}/proj'`,
      'cd ..',
      `cd '${tmp.dir}/proj'`,
    ], {VIRTUAL_ENV: venv}, tmp.dir);
    const lines = r1.stderr.split('\n').filter((l) => l.includes('cudaenv: CUDA 11.8.0'));
    expect(lines).toHaveLength(4);
    expect(lines[0]).toContain('DEP_2');
    expect(lines[1]).toMatch(/all \d+ libraries resolve/);
    expect(lines[2]).toBe(lines[0]); // auto-switch: prepend (the default policy), from the cache
    expect(lines[3]).toBe(lines[0]);
    // Two `use` calls and nothing else: every hook switch was answered from the cache.
    expect(cliCalls(cli.log).map((c) => c.split(' ')[0])).toEqual(['use', 'use']);

    // Replace the toolkit's library by the fixed one: the hook sees lib64 changed and checks again.
    const tkLib = join(pathsFor(store).versions, '11.8.0', 'lib64');
    const fixed = join(tkLib, '.libdep.new');
    gcc(['-shared', '-fPIC', '-o', fixed, '-Wl,-soname,libdep.so.1', '-Wl,--version-script=v2.map', 'dep2.c'], join(tmp.dir, 'src'));
    renameSync(fixed, join(tkLib, 'libdep.so.1'));
    writeFileSync(cli.log, '');
    const r2 = runInteractive('bash', home, store, [`cd '${tmp.dir}/proj'`], {VIRTUAL_ENV: venv}, tmp.dir);
    expect(cliCalls(cli.log)).toEqual(['switch-check 11.8.0']);
    expect(r2.stderr).toMatch(/cudaenv: CUDA 11\.8\.0 and the Python environment's CUDA libraries: all \d+ libraries resolve/);

    // A file that is not a library changes lib64's mtime: the hook asks once, the CLI finds the
    // entry still valid by its fingerprint and refreshes the cache, and the hook trusts it again.
    writeFileSync(join(tkLib, 'README'), 'not a library\n');
    spawnSync('sleep', ['1.1']); // fish's hook compares whole seconds
    writeFileSync(cli.log, '');
    const r3 = runInteractive('bash', home, store, [`cd '${tmp.dir}/proj'`, 'cd ..', `cd '${tmp.dir}/proj'`], {VIRTUAL_ENV: venv}, tmp.dir);
    expect(cliCalls(cli.log)).toEqual(['switch-check 11.8.0']);
    expect(r3.stderr.split('\n').filter((l) => l.includes('all') && l.includes('resolve'))).toHaveLength(2);
  });

  test('LD_PRELOAD is part of what a switch is checked under: a preloaded old libdep.so.1 breaks the wheel that needs DEP_2', async () => {
    const paths = pathsFor(store);
    // An old build (DEP_1 only); the toolkit's own copy was replaced by a fixed one above.
    const oldDep = join(tmp.dir, 'preload', 'libdep.so.1');
    mkdirSync(join(tmp.dir, 'preload'));
    gcc(['-shared', '-fPIC', '-o', oldDep, '-Wl,-soname,libdep.so.1', '-Wl,--version-script=v1.map', 'dep1.c'], join(tmp.dir, 'src'));
    const userLib = join(venv, 'lib', 'python3.11', 'site-packages', 'nvidia', 'user', 'lib', 'libuser.so');
    // The real loader: the preloaded copy is the one bound, whatever the RUNPATH finds.
    const ldd = spawnSync('ldd', ['-r', userLib], {env: {PATH: '/usr/bin:/bin', LD_PRELOAD: oldDep}, encoding: 'utf8'});
    expect(`${ldd.stdout}${ldd.stderr}`).toMatch(/DEP_2.*not found|version `DEP_2' not found/);
    const base = {PATH: '/usr/bin:/bin', VIRTUAL_ENV: venv};
    expect((await switchCheck(paths, '11.8.0', planSwitch(base, store, '11.8.0', 'none', 'pin'))).line).toMatch(/all \d+ libraries resolve/);
    const preloaded = await switchCheck(paths, '11.8.0', planSwitch({...base, LD_PRELOAD: oldDep}, store, '11.8.0', 'none', 'pin'));
    expect(preloaded.cached).toBe(false);
    expect(preloaded.line).toContain('DEP_2');
    expect(preloaded.line).toContain('libdep.so.1');
  });

  testIf(PYTHON_EXE !== null, 'needs python3 (apt-get install python3)')('the wheels are checked as the environment\'s Python loads them: a static TLS block that does not fit', async () => {
    const paths = pathsFor(store);
    // Two environments with the same wheel: one with its interpreter, one without any.
    const withPython = join(tmp.dir, 'venv-tls');
    const without = join(tmp.dir, 'venv-tls-nopython');
    const wheelLib = (v: string): string => join(v, 'lib', 'python3.11', 'site-packages', 'nvidia', 'tlsheavy', 'lib', 'libtlsheavy.so');
    // libgomp, jemalloc and the OpenMP runtimes access their thread-locals this way; 64 KB is past any surplus.
    writeFileSync(join(tmp.dir, 'src', 'tls.c'), '__thread char big[65536] __attribute__((tls_model("initial-exec")));\nchar *get_big(void){return big;}\n');
    for (const v of [withPython, without]) {
      mkdirSync(join(wheelLib(v), '..'), {recursive: true});
      gcc(['-shared', '-fPIC', '-o', wheelLib(v), '-Wl,-soname,libtlsheavy.so', 'tls.c'], join(tmp.dir, 'src'));
    }
    mkdirSync(join(withPython, 'bin'));
    execFileSync('ln', ['-s', PYTHON_EXE!, join(withPython, 'bin', 'python3')]);
    const lib = wheelLib(withPython);
    // The premise, from the real loaders: ldd -r sees nothing wrong; Python's dlopen fails.
    expect(spawnSync('ldd', ['-r', lib], {encoding: 'utf8'}).stderr).toBe('');
    expect(spawnSync(join(withPython, 'bin', 'python3'), ['-c', 'import ctypes, sys; ctypes.CDLL(sys.argv[1])', lib], {encoding: 'utf8'}).stderr)
      .toContain(`${lib}: cannot allocate memory in static TLS block`);
    const line = (await switchCheck(paths, '12.4.1', planSwitch({PATH: '/usr/bin:/bin', VIRTUAL_ENV: withPython}, store, '12.4.1', 'none', 'pin'))).line;
    expect(line).toMatch(/^cudaenv: CUDA 12\.4\.1 and the Python environment's CUDA libraries: /);
    expect(line).toContain('libtlsheavy.so');
    expect(line).toContain('static TLS');
    // No interpreter in the environment: checked as `ldd -r` loads them, which cannot see it.
    const plain = (await switchCheck(paths, '12.4.1', planSwitch({PATH: '/usr/bin:/bin', VIRTUAL_ENV: without}, store, '12.4.1', 'none', 'pin'))).line;
    expect(plain).toMatch(/: all 1 library resolves$/);
  });
});

describeIf(canBuild, 'needs gcc and bash (apt-get install gcc bash)')('the check after a switch, when a library is not found', () => {
  test('its fix names a version of the store that has it, and a version installed later changes the cached line', async () => {
    const tmp = makeTempDir('cudaenv-switchcheck-store-');
    try {
      const store = join(tmp.dir, 'store');
      const paths = await makeStore(store, ['11.8.0']);
      const src = join(tmp.dir, 'src');
      mkdirSync(src);
      writeFileSync(join(src, 'only.c'), 'int only_fn(void) { return 1; }\n');
      writeFileSync(join(src, 'w.c'), 'int only_fn(void);\nint w_fn(void) { return only_fn(); }\n');
      gcc(['-shared', '-fPIC', '-o', 'libonly.so.1', '-Wl,-soname,libonly.so.1', 'only.c'], src);
      const venv = join(tmp.dir, 'venv');
      const wheel = join(venv, 'lib', 'python3.11', 'site-packages', 'nvidia', 'w', 'lib');
      mkdirSync(wheel, {recursive: true});
      gcc(['-shared', '-fPIC', '-o', join(wheel, 'libw.so'), '-Wl,-soname,libw.so', 'w.c', join(src, 'libonly.so.1')], src);
      expect(spawnSync('ldd', [join(wheel, 'libw.so')], {encoding: 'utf8', env: {PATH: '/usr/bin:/bin'}}).stdout).toContain('libonly.so.1 => not found');
      const env = () => planSwitch({PATH: '/usr/bin:/bin', VIRTUAL_ENV: venv}, store, '11.8.0', 'none', 'pin');
      const before = await switchCheck(paths, '11.8.0', env());
      expect(before.line).toContain('libonly.so.1');
      expect(before.line).not.toContain('cudaenv use');
      expect((await switchCheck(paths, '11.8.0', env())).cached).toBe(true);
      // A version that ships the library is installed: the line is made again, with it as the fix.
      makeFakeToolkit(join(paths.versions, '12.4.1'), {version: '12.4.1'});
      execFileSync('cp', [join(src, 'libonly.so.1'), join(paths.versions, '12.4.1', 'lib64')]);
      const after = await switchCheck(paths, '11.8.0', env());
      expect(after.cached).toBe(false);
      expect(after.line).toContain('`cudaenv use 12.4.1 --ld-library-path prepend`');
    } finally {
      tmp.cleanup();
    }
  });

  test('pip installing torch (or a first nvidia wheel) after a cached check makes the next switch check its libraries', async () => {
    const tmp = makeTempDir('cudaenv-switchcheck-pip-');
    try {
      const store = join(tmp.dir, 'store');
      const paths = await makeStore(store, ['12.4.1']);
      const venv = join(tmp.dir, 'venv');
      const sp = join(venv, 'lib', 'python3.11', 'site-packages');
      mkdirSync(join(sp, 'numpy'), {recursive: true});
      const env = () => planSwitch({PATH: '/usr/bin:/bin', VIRTUAL_ENV: venv}, store, '12.4.1', 'none', 'pin');
      const before = await switchCheck(paths, '12.4.1', env());
      expect(before.line).not.toContain('Python environment');
      expect((await switchCheck(paths, '12.4.1', env())).cached).toBe(true);
      // torch arrives with a library whose dependency is missing.
      const src = join(tmp.dir, 'src');
      mkdirSync(src);
      writeFileSync(join(src, 'gone.c'), 'int gone(void) { return 1; }\n');
      writeFileSync(join(src, 't.c'), 'int gone(void);\nint t(void) { return gone(); }\n');
      gcc(['-shared', '-fPIC', '-o', 'libgone.so.1', '-Wl,-soname,libgone.so.1', 'gone.c'], src);
      mkdirSync(join(sp, 'torch', 'lib'), {recursive: true});
      gcc(['-shared', '-fPIC', '-o', join(sp, 'torch', 'lib', 'libtorch_cuda.so'), 't.c', join(src, 'libgone.so.1')], src);
      const after = await switchCheck(paths, '12.4.1', env());
      expect(after.cached).toBe(false);
      expect(after.line).toMatch(/^cudaenv: CUDA 12\.4\.1 and the Python environment's CUDA libraries: /);
      expect(after.line).toContain('libgone.so.1');
      // A file that is no library or package (pip's RECORD, a README) still changes nothing.
      writeFileSync(join(sp, 'README.txt'), 'x\n');
      expect((await switchCheck(paths, '12.4.1', env())).cached).toBe(true);
    } finally {
      tmp.cleanup();
    }
  });
});

const LDCONFIG = ['/usr/sbin/ldconfig', '/sbin/ldconfig'].find((p) => existsSync(p)) ?? null;

describe('the switch check after ldconfig changed the loader cache', () => {
  // A library the line called missing is found once a package adds its directory to
  // ld.so.conf.d and runs ldconfig (or stops being found when one is removed): /etc/ld.so.cache
  // changes, no library directory does. Each shell runs in a private mount namespace with a copy
  // of /etc over the real one, so its ldconfig rewrites only the copy; `ldd -r` in the same
  // namespace is the oracle.
  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    const can = canBuild && have(shell) && CAN_MOUNT_NAMESPACE && LDCONFIG !== null;
    const why = !CAN_MOUNT_NAMESPACE ? NEEDS.mountNamespace : LDCONFIG === null ? NEEDS.tool('ldconfig', 'libc-bin') : `needs gcc and ${shell} (apt-get install gcc ${shell})`;
    testIf(can, why)(`${shell}: the hook checks again, and the line says the library resolves, as ldd -r does`, async () => {
      const tmp = makeTempDir(`cudaenv-switchcheck-ldcache-${shell}-`);
      try {
        const store = join(tmp.dir, 'store');
        const paths = await makeStore(store, ['12.4.1']);
        const src = join(tmp.dir, 'src');
        const opt = join(tmp.dir, 'opt', 'lib');
        mkdirSync(src);
        mkdirSync(opt, {recursive: true});
        writeFileSync(join(src, 'bar.c'), 'int bar(void) { return 1; }\n');
        writeFileSync(join(src, 'foo.c'), 'int bar(void);\nint foo(void) { return bar(); }\n');
        gcc(['-shared', '-fPIC', '-o', join(opt, 'libbar.so.1'), '-Wl,-soname,libbar.so.1', 'bar.c'], src);
        const foo = join(paths.versions, '12.4.1', 'lib64', 'libfoo.so.1');
        gcc(['-shared', '-fPIC', '-o', foo, '-Wl,-soname,libfoo.so.1', 'foo.c', join(opt, 'libbar.so.1')], src);
        const home = join(tmp.dir, 'home');
        mkdirSync(home);
        const cli = loggingCli(tmp.dir);
        writeRc(shell, home, {bin: cli.bin});
        const proj = join(tmp.dir, 'proj');
        mkdirSync(proj);
        writeFileSync(join(proj, '.cuda-version'), '12.4\n');
        spawnSync('sleep', ['1.1']); // fish's hook compares whole seconds: the directories must be older than the cache file
        const etc = join(tmp.dir, 'etc');
        const wrapper = ['unshare', '-m', 'sh', '-c', 'cp -a /etc "$0" && mount --bind "$0" /etc && exec "$@"', etc];
        const r = runInteractive(shell, home, store, [
          `cd '${proj}'`,
          `ldd -r '${foo}'`,
          'cd ..',
          'sleep 1.1',
          `echo '${opt}' > /etc/ld.so.conf.d/zz-cudaenv-test.conf`,
          LDCONFIG!,
          `ldd -r '${foo}'`,
          `cd '${proj}'`,
        ], {}, tmp.dir, wrapper);
        // The oracle: not found, then found through the new cache.
        const ldd = r.stdout.split('\n').filter((l) => l.includes('libbar.so.1'));
        expect(ldd).toEqual([expect.stringMatching(/libbar\.so\.1 => not found/), expect.stringContaining(`libbar.so.1 => ${opt}/libbar.so.1`)]);
        // zsh writes its prompt to stderr too, in front of the line.
        const lines = r.stderr.split('\n').filter((l) => l.includes('cudaenv: CUDA 12.4.1')).map((l) => l.slice(l.indexOf('cudaenv: CUDA')));
        expect(lines).toHaveLength(2);
        expect(lines[0]).toContain('libbar.so.1');
        expect(lines[0]).toContain('cannot find');
        expect(lines[1]).toMatch(/: all \d+ librar(y|ies) resolves?$/);
        expect(cliCalls(cli.log).filter((c) => c.startsWith('switch-check'))).toEqual(['switch-check 12.4.1', 'switch-check 12.4.1']);
      } finally {
        tmp.cleanup();
      }
    });
  }
});

/**
 * libqq.so.1 in two builds (good/: QQ_1 and QQ_2; `oldQq(dir)`: QQ_1 only) and the toolkit's
 * lib64/libfoo.so.1, which needs qq_new@QQ_2: which copy the loader binds decides the verdict.
 */
function qqFixture(tmpDir: string, versionsDir: string): {good: string; foo: string; oldQq: (dir: string) => void} {
  const src = join(tmpDir, 'src');
  const good = join(tmpDir, 'good');
  for (const d of [src, good]) mkdirSync(d);
  writeFileSync(join(src, 'qq.c'), 'int qq_old(void) { return 1; }\nint qq_new(void) { return 2; }\n');
  writeFileSync(join(src, 'qq2.map'), 'QQ_1 { global: qq_old; local: *; };\nQQ_2 { global: qq_new; } QQ_1;\n');
  writeFileSync(join(src, 'qq-old.c'), 'int qq_old(void) { return 1; }\n');
  writeFileSync(join(src, 'qq1.map'), 'QQ_1 { global: qq_old; local: *; };\n');
  writeFileSync(join(src, 'foo.c'), 'int qq_new(void);\nint foo(void) { return qq_new(); }\n');
  gcc(['-shared', '-fPIC', '-o', join(good, 'libqq.so.1'), '-Wl,-soname,libqq.so.1', '-Wl,--version-script=qq2.map', 'qq.c'], src);
  const foo = join(versionsDir, '12.4.1', 'lib64', 'libfoo.so.1');
  gcc(['-shared', '-fPIC', '-o', foo, '-Wl,-soname,libfoo.so.1', 'foo.c', join(good, 'libqq.so.1')], src);
  const oldQq = (dir: string) => gcc(['-shared', '-fPIC', '-o', join(dir, 'libqq.so.1'), '-Wl,-soname,libqq.so.1', '-Wl,--version-script=qq1.map', 'qq-old.c'], src);
  return {good, foo, oldQq};
}

describe('the switch check with an LD_LIBRARY_PATH entry that is the current directory', () => {
  // `export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/good` with nothing set before leaves a leading
  // ':', an empty entry, which ld.so searches as the current directory: the result depends on
  // where the shell is, and a line cached in one project must not answer for another.
  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    testIf(canBuild && have(shell), `needs gcc and ${shell} (apt-get install gcc ${shell})`)(`${shell}: each directory is checked as ld.so searches it there, and cached for it`, async () => {
      const tmp = makeTempDir(`cudaenv-switchcheck-cwd-${shell}-`);
      try {
        const store = join(tmp.dir, 'store');
        const paths = await makeStore(store, ['12.4.1']);
        const [projA, projB] = [join(tmp.dir, 'projA'), join(tmp.dir, 'projB')];
        for (const d of [projA, projB]) mkdirSync(d);
        const {good, foo, oldQq} = qqFixture(tmp.dir, paths.versions);
        // projB holds an old build (QQ_1 only), as a project directory may hold a vendored copy.
        oldQq(projB);
        for (const p of [projA, projB]) writeFileSync(join(p, '.cuda-version'), '12.4\n');
        const home = join(tmp.dir, 'home');
        mkdirSync(home);
        const cli = loggingCli(tmp.dir);
        writeRc(shell, home, {bin: cli.bin});
        spawnSync('sleep', ['1.1']); // fish's hook compares whole seconds: the directories must be older than the cache file
        const r = runInteractive(shell, home, store, [
          `cd '${projA}'`, `ldd -r '${foo}'`, 'cd ..',
          `cd '${projB}'`, `ldd -r '${foo}'`, 'cd ..',
          `cd '${projA}'`, 'cd ..', `cd '${projB}'`,
        ], {LD_LIBRARY_PATH: `:${good}`}, tmp.dir);
        // The oracle, in each directory: the good copy in projA, projB's own old one there.
        expect(r.stdout).toContain(`libqq.so.1 => ${good}/libqq.so.1`);
        expect(r.stdout).toMatch(/version `QQ_2' not found/);
        const lines = r.stderr.split('\n').filter((l) => l.includes('cudaenv: CUDA 12.4.1')).map((l) => l.slice(l.indexOf('cudaenv: CUDA')));
        expect(lines).toHaveLength(4);
        expect(lines[0]).toMatch(/: all 1 library resolves$/);
        expect(lines[1]).toContain('QQ_2');
        expect(lines[1]).toContain('libqq.so.1');
        expect([lines[2], lines[3]]).toEqual([lines[0], lines[1]]);
        // Checked once per directory; the second visit of each is answered by the hook's cache.
        expect(cliCalls(cli.log).filter((c) => c.startsWith('switch-check'))).toEqual(['switch-check 12.4.1', 'switch-check 12.4.1']);
      } finally {
        tmp.cleanup();
      }
    });
  }
});

describe('the switch check with an LD_LIBRARY_PATH directory that does not exist (yet)', () => {
  // rc files often name a directory this machine lacks (/usr/local/cuda/extras/CUPTI/lib64): the
  // hook must answer every switch after the first from its cache, not start the CLI each time,
  // and still check again once the directory appears with a library in it.
  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    testIf(canBuild && have(shell), `needs gcc and ${shell} (apt-get install gcc ${shell})`)(`${shell}: answered from the cache while it is absent, checked again once it exists`, async () => {
      const tmp = makeTempDir(`cudaenv-switchcheck-absent-${shell}-`);
      try {
        const store = join(tmp.dir, 'store');
        const paths = await makeStore(store, ['12.4.1']);
        const later = join(tmp.dir, 'later', 'lib64');
        const proj = join(tmp.dir, 'proj');
        mkdirSync(proj);
        const {good, foo, oldQq} = qqFixture(tmp.dir, paths.versions);
        writeFileSync(join(proj, '.cuda-version'), '12.4\n');
        const home = join(tmp.dir, 'home');
        mkdirSync(home);
        const cli = loggingCli(tmp.dir);
        writeRc(shell, home, {bin: cli.bin});
        spawnSync('sleep', ['1.1']); // fish's hook compares whole seconds: the directories must be older than the cache file
        const env = {LD_LIBRARY_PATH: `${later}:${good}`};
        const visits = [`cd '${proj}'`, 'cd ..', `cd '${proj}'`, 'cd ..', `cd '${proj}'`];
        const run = () => {
          writeFileSync(cli.log, '');
          const r = runInteractive(shell, home, store, [...visits, `ldd -r '${foo}'`], env, tmp.dir);
          const lines = r.stderr.split('\n').filter((l) => l.includes('cudaenv: CUDA 12.4.1')).map((l) => l.slice(l.indexOf('cudaenv: CUDA')));
          return {lines, ldd: r.stdout, checks: cliCalls(cli.log).filter((c) => c.startsWith('switch-check'))};
        };
        const before = run();
        expect(before.lines).toEqual(Array(3).fill('cudaenv: CUDA 12.4.1: all 1 library resolves'));
        expect(before.checks).toEqual(['switch-check 12.4.1']);
        // The directory appears, holding an old build: the loader now binds it first.
        mkdirSync(later, {recursive: true});
        oldQq(later);
        spawnSync('sleep', ['1.1']); // as above: the new directory must be older than the cache file written next
        const after = run();
        expect(after.ldd).toMatch(/version `QQ_2' not found/);
        expect(after.checks).toEqual(['switch-check 12.4.1']);
        expect(after.lines).toHaveLength(3);
        for (const l of after.lines) expect(l).toContain('QQ_2');
      } finally {
        tmp.cleanup();
      }
    });
  }
});

describe('the switch check\'s cache key follows the Python the shell would run', () => {
  for (const shell of ['bash', 'zsh', 'fish'] as const) {
    testIf(have(shell) && PYTHON_EXE !== null, `needs ${shell} and python3 (apt-get install ${shell} python3)`)(`${shell}: another python3 first on PATH (module load python), pyenv shell/local/global, GLIBC_TUNABLES: checked anew; the same is answered by the hook`, async () => {
      const tmp = makeTempDir(`cudaenv-switchcheck-py-${shell}-`);
      try {
        const store = join(tmp.dir, 'store');
        await makeStore(store, ['12.4.1']);
        const home = join(tmp.dir, 'home');
        mkdirSync(home);
        const cli = loggingCli(tmp.dir);
        writeRc(shell, home, {bin: cli.bin});
        mkdirSync(join(tmp.dir, 'proj'));
        writeFileSync(join(tmp.dir, 'proj', '.cuda-version'), '12.4\n');
        const alt = join(tmp.dir, 'module-python', 'bin');
        mkdirSync(alt, {recursive: true});
        execFileSync('ln', ['-s', PYTHON_EXE!, join(alt, 'python3')]);
        spawnSync('sleep', ['1.1']); // fish's hook compares whole seconds: the directories must be older than the cache file
        const checks = (env: NodeJS.ProcessEnv): string[] => {
          writeFileSync(cli.log, '');
          runInteractive(shell, home, store, [`cd '${tmp.dir}/proj'`, 'cd ..', `cd '${tmp.dir}/proj'`], env, tmp.dir);
          return cliCalls(cli.log).filter((c) => c.startsWith('switch-check'));
        };
        // The first switch checks; the second, and a new shell with the same PATH, use the cache.
        expect(checks({})).toEqual(['switch-check 12.4.1']);
        expect(checks({})).toEqual([]);
        // Another interpreter first on PATH: its site-packages may hold another torch.
        const moved = {PATH: `${alt}:/usr/bin:/bin`};
        expect(checks(moved)).toEqual(['switch-check 12.4.1']);
        expect(checks(moved)).toEqual([]);
        // pyenv shell sets PYENV_VERSION: the shim is the same file, the interpreter is not.
        expect(checks({PYENV_VERSION: '3.12.1'})).toEqual(['switch-check 12.4.1']);
        // The loader's own tunables (here the static TLS surplus) are part of it too.
        expect(checks({GLIBC_TUNABLES: 'glibc.rtld.optional_static_tls=4096'})).toEqual(['switch-check 12.4.1']);
        expect(checks({GLIBC_TUNABLES: 'glibc.rtld.optional_static_tls=4096'})).toEqual([]);
        // pyenv global / local: the shim runs what $PYENV_ROOT/version or the nearest .python-version names.
        const pyenvRoot = join(tmp.dir, 'pyenv');
        mkdirSync(join(pyenvRoot, 'shims'), {recursive: true});
        execFileSync('ln', ['-s', PYTHON_EXE!, join(pyenvRoot, 'shims', 'python3')]);
        writeFileSync(join(pyenvRoot, 'version'), '3.11.7\n');
        spawnSync('sleep', ['1.1']);
        const pyenv = {PATH: `${join(pyenvRoot, 'shims')}:/usr/bin:/bin`, PYENV_ROOT: pyenvRoot};
        expect(checks(pyenv)).toEqual(['switch-check 12.4.1']);
        expect(checks(pyenv)).toEqual([]);
        writeFileSync(join(tmp.dir, 'proj', '.python-version'), '3.12.1\n');
        expect(checks(pyenv)).toEqual(['switch-check 12.4.1']);
        expect(checks(pyenv)).toEqual([]);
        writeFileSync(join(pyenvRoot, 'version'), '3.10.4\n'); // the project's file still decides
        expect(checks(pyenv)).toEqual([]);
      } finally {
        tmp.cleanup();
      }
    });
  }
});
