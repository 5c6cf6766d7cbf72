import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {spawnSync} from 'node:child_process';
import {CLI, cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {buildLib, HAVE_GCC, HAVE_LDD, lddVerdict} from '../core/elf/fixtures.js';
import {makeCondaPrefix} from '../core/conda/fixtures-env.js';
import {FAKE_CONDA} from '../core/conda/conda-sim.js';
import {describeIf, testIf} from '../helpers/skip.js';
import {CAN_MOUNT_NAMESPACE, NEEDS, PYTHON_EXE} from '../helpers/capabilities.js';

/** `cudaenv conda hook install|uninstall|status` through the built CLI. */

let tmp: {dir: string; cleanup: () => void};
let store: string;
let home: string;
let envA: string;
let envB: string;

const hookFile = (prefix: string, dir: string, ext: string) => join(prefix, 'etc', 'conda', dir, `~~cudaenv.${ext}`);
const allHookFiles = (prefix: string) => ['activate.d', 'deactivate.d'].flatMap((d) => ['sh', 'fish', 'csh'].map((e) => hookFile(prefix, d, e)));

beforeAll(() => {
  tmp = makeTempDir('cudaenv-conda-cmd-');
  store = join(tmp.dir, 'store');
  home = join(tmp.dir, 'home');
  mkdirSync(home, {recursive: true});
  makeFakeToolkit(join(store, 'versions', '12.4.1'), {version: '12.4.1'});
  makeFakeToolkit(join(store, 'versions', '12.2.0'), {version: '12.2.0'});
  envA = makeCondaPrefix(join(tmp.dir, 'miniforge', 'envs', 'torch'), 'A');
  envB = makeCondaPrefix(join(tmp.dir, 'miniforge', 'envs', 'plain'), 'B');
  mkdirSync(join(home, '.conda'), {recursive: true});
  writeFileSync(join(home, '.conda', 'environments.txt'), `${envA}\n${envB}\n${join(tmp.dir, 'deleted-env')}\n`);
});
afterAll(() => tmp?.cleanup());

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const e = cliEnv(store, {HOME: home});
  delete e.CONDA_PREFIX;
  delete e.LD_LIBRARY_PATH;
  return {...e, ...extra};
}

describe('cudaenv conda hook install', () => {
  test('writes the six scripts into the active environment (CONDA_PREFIX) for the given spec', () => {
    const r = runCli(['conda', 'hook', 'install', '12.4', '--json'], {env: env({CONDA_PREFIX: envA})});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({prefix: envA, name: 'torch', version: '12.4.1', toolkit: join(store, 'versions', '12.4.1'), ldLibraryPath: 'prepend', replaced: null, forced: false});
    expect(j.scripts.sort()).toEqual(allHookFiles(envA).sort());
    for (const f of allHookFiles(envA)) expect(readFileSync(f, 'utf8')).toContain('"version":"12.4.1"');
    expect(j.check.targets).toEqual([join(envA, 'lib')].filter(existsSync));
  });

  test('the installed sh hook switches the environment in a real shell and restores it', () => {
    const out = join(tmp.dir, 'bash-run');
    mkdirSync(out, {recursive: true});
    const script = `set -eu
conda() { _o=$("${process.execPath}" "${FAKE_CONDA}" posix "$@"); eval "$_o"; }
conda activate "${envA}"
printf '%s\\n' "$CUDA_HOME" "$(command -v nvcc)" "$LD_LIBRARY_PATH"
conda deactivate
printf '%s\\n' "\${CUDA_HOME-unset}" "\${LD_LIBRARY_PATH-unset}"
`;
    const r = spawnSync('bash', ['-c', script], {encoding: 'utf8', env: {PATH: process.env.PATH, HOME: home, CONDA_SHLVL: '0', TRACE_FILE: join(out, 'trace')}});
    expect(r.stderr).toBe('');
    const v = join(store, 'versions', '12.4.1');
    expect(r.stdout.split('\n')).toEqual([v, join(v, 'bin', 'nvcc'), `${join(v, 'lib64')}:/pkg/A/lib`, 'unset', 'unset', '']);
  });

  test('installing again replaces the hook; without a spec the .cuda-version of the current directory decides', () => {
    const proj = join(tmp.dir, 'proj');
    mkdirSync(proj, {recursive: true});
    writeFileSync(join(proj, '.cuda-version'), '12.2\n');
    const r = runCli(['conda', 'hook', 'install', '-p', envA], {env: env(), cwd: proj});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`replaced the conda hook in torch (${envA}): CUDA 12.2.0 (set by ${join(proj, '.cuda-version')}), was 12.4.1`);
    expect(readFileSync(hookFile(envA, 'activate.d', 'sh'), 'utf8')).toContain(join(store, 'versions', '12.2.0'));
    expect(readFileSync(hookFile(envA, 'activate.d', 'sh'), 'utf8')).not.toContain('12.4.1');
  });

  test('--ld-library-path none: the hook leaves LD_LIBRARY_PATH alone and no check runs', () => {
    const r = runCli(['conda', 'hook', 'install', '12.4', '-p', envB, '--ld-library-path', 'none', '--json'], {env: env()});
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j).toMatchObject({ldLibraryPath: 'none', check: null});
    expect(readFileSync(hookFile(envB, 'activate.d', 'sh'), 'utf8')).not.toContain('LD_LIBRARY_PATH="$_cudaenv_lib');
  });

  test('bad input: clear errors with the right exit status, nothing written', () => {
    const notConda = join(tmp.dir, 'not-conda');
    mkdirSync(notConda, {recursive: true});
    let r = runCli(['conda', 'hook', 'install', '12.4'], {env: env()});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no conda environment is active (CONDA_PREFIX is not set)');
    r = runCli(['conda', 'hook', 'install', '12.4', '-p', notConda], {env: env()});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${notConda} (-p) is not a conda environment: it has no conda-meta/ directory`);
    expect(existsSync(join(notConda, 'etc'))).toBe(false);
    r = runCli(['conda', 'hook', 'install', '11.8', '-p', envB], {env: env()});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('CUDA 11.8 is not installed');
    r = runCli(['conda', 'hook', 'install', 'system', '-p', envB], {env: env()});
    expect(r.status).toBe(2);
    r = runCli(['conda', 'hook', 'install', '12.4', '-p', envB, '-n', 'plain'], {env: env()});
    expect(r.status).toBe(2);
    r = runCli(['conda', 'hook', 'install', '12.4', '-n', 'nosuch'], {env: env()});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('no conda environment named nosuch in ~/.conda/environments.txt');
    r = runCli(['conda', 'hook', 'install', '-p', envB], {env: env(), cwd: tmp.dir});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no CUDA version is selected here');
  });
});

describe('cudaenv conda hook install on a read-only environment', () => {
  testIf(CAN_MOUNT_NAMESPACE, NEEDS.mountNamespace)('the error names the read-only directory (not ENOENT) and nothing is written', () => {
    const envRo = makeCondaPrefix(join(tmp.dir, 'miniforge', 'envs', 'readonly'), 'R');
    // A fresh environment has no etc/conda yet: Node's recursive mkdir then reports EROFS as ENOENT.
    rmSync(join(envRo, 'etc'), {recursive: true, force: true});
    const cli = CLI;
    const r = spawnSync('unshare', ['-m', 'sh', '-c', 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"', 'sh', envRo,
      process.execPath, cli, 'conda', 'hook', 'install', '12.4', '-p', envRo, '--ld-library-path', 'none'], {encoding: 'utf8', env: env()});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`: ${envRo} is on a read-only file system\n`);
    expect(r.stderr).not.toContain('ENOENT');
    for (const f of allHookFiles(envRo)) expect(existsSync(f)).toBe(false);
  });
});

describe('cudaenv conda hook status and uninstall', () => {
  test('status lists the hooked environments from ~/.conda/environments.txt with their versions', () => {
    runCli(['conda', 'hook', 'install', '12.4', '-p', envA], {env: env()});
    runCli(['conda', 'hook', 'uninstall', '-p', envB], {env: env()});
    const r = runCli(['conda', 'hook', 'status', '--json'], {env: env()});
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.source).toBe('environments.txt');
    expect(j.environments).toHaveLength(1);
    expect(j.environments[0]).toMatchObject({prefix: envA, name: 'torch', active: false, error: null,
      hook: {version: '12.4.1', toolkit: join(store, 'versions', '12.4.1'), ldLibraryPath: 'prepend', toolkitPresent: true, missing: []}});
    const text = runCli(['conda', 'hook', 'status'], {env: env({CONDA_PREFIX: envB})});
    expect(text.stdout).toContain(`  torch (${envA}): CUDA 12.4.1 (LD_LIBRARY_PATH prepended)`);
    expect(text.stdout).toContain(`* plain (${envB}): no cudaenv hook`);
  });

  test('environments come from `conda env list --json` when conda is on PATH; -n finds them there', () => {
    const bin = join(tmp.dir, 'fakebin');
    mkdirSync(bin, {recursive: true});
    // Faithful to conda's documented output: {"envs": [prefix, ...]}.
    writeFileSync(join(bin, 'conda'), `#!/bin/sh\nif [ "$*" = "env list --json" ]; then printf '{\\n  "envs": [\\n    "%s"\\n  ]\\n}\\n' '${envB}'; exit 0; fi\nexit 1\n`);
    chmodSync(join(bin, 'conda'), 0o755);
    const e = env({PATH: `${bin}:${process.env.PATH}`});
    let r = runCli(['conda', 'hook', 'install', '12.2', '-n', 'plain', '--json'], {env: e});
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).prefix).toBe(envB);
    r = runCli(['conda', 'hook', 'status', '--json'], {env: e});
    const j = JSON.parse(r.stdout);
    expect(j.source).toBe('conda');
    expect(j.environments.map((x: {prefix: string; hook: {version: string}}) => [x.prefix, x.hook.version])).toEqual([[envB, '12.2.0']]);
    r = runCli(['conda', 'hook', 'uninstall', '-n', 'plain'], {env: e});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`removed the conda hook for CUDA 12.2.0 from plain (${envB}) (6 scripts)`);
    for (const f of allHookFiles(envB)) expect(existsSync(f)).toBe(false);
    // The package's own scripts are untouched.
    expect(existsSync(join(envB, 'etc', 'conda', 'activate.d', '~cuda-nvcc_activate.sh'))).toBe(true);
    r = runCli(['conda', 'hook', 'uninstall', '-n', 'plain'], {env: e});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('no cudaenv hook');
  });

  test('status says when a hooked version has gone', () => {
    const gone = join(tmp.dir, 'gone-store');
    makeFakeToolkit(join(gone, 'versions', '12.0.1'), {version: '12.0.1'});
    expect(runCli(['conda', 'hook', 'install', '12.0', '-p', envB], {env: {...env(), CUDAENV_DIR: gone}}).status).toBe(0);
    spawnSync('rm', ['-rf', join(gone, 'versions', '12.0.1')]);
    const r = runCli(['conda', 'hook', 'status'], {env: env()});
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`plain (${envB}): CUDA 12.0.1 (LD_LIBRARY_PATH prepended; toolkit ${join(gone, 'versions', '12.0.1')} is gone: activation only warns)`);
    runCli(['conda', 'hook', 'uninstall', '-p', envB], {env: env()});
  });
});

describeIf(HAVE_GCC, 'needs gcc (apt-get install gcc)')('the install-time library check (the __nvJitLinkComplete_12_4 case)', () => {
  let envT: string;
  let cusparse: string;
  let oldLib: string;

  beforeAll(() => {
    envT = makeCondaPrefix(join(tmp.dir, 'miniforge', 'envs', 'wheels'), 'T');
    const sp = join(envT, 'lib', 'python3.11', 'site-packages');
    const jit = buildLib({
      out: join(sp, 'nvidia', 'nvjitlink', 'lib', 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12',
      source: 'int __nvJitLinkComplete_12_4(void){return 0;}\n',
      versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkComplete_12_4; local: *; };\n',
    });
    cusparse = buildLib({
      out: join(sp, 'nvidia', 'cusparse', 'lib', 'libcusparse.so.12'), soname: 'libcusparse.so.12',
      source: 'int __nvJitLinkComplete_12_4(void);\nint cusparseCreate(void){return __nvJitLinkComplete_12_4();}\n',
      link: [jit], runpath: '$ORIGIN/../../nvjitlink/lib',
    });
    // An older toolkit whose libnvJitLink.so.12 lacks the 12.4 symbol.
    makeFakeToolkit(join(store, 'versions', '12.3.2'), {version: '12.3.2'});
    oldLib = buildLib({
      out: join(store, 'versions', '12.3.2', 'lib64', 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12',
      source: 'int __nvJitLinkComplete_12_3(void){return 0;}\n',
      versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkComplete_12_3; local: *; };\n',
    });
  });

  testIf(HAVE_LDD, 'needs ldd (apt-get install libc-bin)')('the real loader agrees: the wheel resolves alone and breaks with the old lib64 first', () => {
    expect(lddVerdict(cusparse).symbols).toEqual([]);
    expect(lddVerdict(cusparse, join(store, 'versions', '12.3.2', 'lib64')).raw).toContain('__nvJitLinkComplete_12_4');
    void oldLib;
  });

  test('refuses, explains, suggests --ld-library-path none, and writes nothing', () => {
    const r = runCli(['conda', 'hook', 'install', '12.3', '-p', envT], {env: env()});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`not installing the hook: with CUDA 12.3.2's libraries first on LD_LIBRARY_PATH, libraries of the conda environment ${envT} would bind a wrong library:`);
    expect(r.stderr).toContain('__nvJitLinkComplete_12_4');
    expect(r.stderr).toContain('libcusparse.so.12');
    expect(r.stderr).toMatch(/^ {4}instead of .*\/nvjitlink\/lib\/libnvJitLink\.so\.12 \(DT_RUNPATH entry \$ORIGIN\/\.\.\/\.\.\/nvjitlink\/lib of .*\), which would satisfy it$/m);
    expect(r.stderr).toContain(`cudaenv conda hook install 12.3.2 -p ${envT} --ld-library-path none`);
    expect(r.stderr).toContain('--force');
    for (const f of allHookFiles(envT)) expect(existsSync(f)).toBe(false);
    const j = JSON.parse(runCli(['conda', 'hook', 'install', '12.3', '-p', envT, '--json'], {env: env()}).stdout);
    expect(j).toMatchObject({ok: false, error: {code: 'hook-breaks-libraries'}});
  });

  test('the suggested command quotes a prefix with spaces and quotes', () => {
    const spaced = join(tmp.dir, "my envs", "wheels 'T'");
    mkdirSync(join(tmp.dir, 'my envs'), {recursive: true});
    expect(spawnSync('cp', ['-a', envT, spaced]).status).toBe(0);
    const r = runCli(['conda', 'hook', 'install', '12.3', '-p', spaced], {env: env()});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cudaenv conda hook install 12.3.2 -p '${join(tmp.dir, 'my envs', "wheels '\\''T'\\''")}' --ld-library-path none`);
  });

  test('a version whose libraries do not shadow the wheel\'s installs after the same check', () => {
    const r = runCli(['conda', 'hook', 'install', '12.4', '-p', envT, '--json'], {env: env()});
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.check.targets).toEqual(expect.arrayContaining([join(envT, 'lib', 'python3.11', 'site-packages', 'nvidia', 'cusparse', 'lib')]));
    expect(j.check.problems).toEqual([]);
  });

  test('--force installs anyway and reports what it overrode; --ld-library-path none needs no force', () => {
    let r = runCli(['conda', 'hook', 'install', '12.3', '-p', envT, '--force', '--json'], {env: env()});
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.forced).toBe(true);
    expect(j.check.problems[0]).toMatchObject({object: cusparse, symbol: '__nvJitLinkComplete_12_4'});
    expect(readFileSync(hookFile(envT, 'activate.d', 'sh'), 'utf8')).toContain('"version":"12.3.2"');
    r = runCli(['conda', 'hook', 'install', '12.3', '-p', envT, '--force'], {env: env()});
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('__nvJitLinkComplete_12_4');
    expect(r.stdout).not.toContain('still resolve');
    expect(r.stdout).toMatch(/LD_LIBRARY_PATH: 12\.3\.2's libraries first; \d+ library problem\(s\) of the environment overridden with --force/);
    r = runCli(['conda', 'hook', 'install', '12.3', '-p', envT], {env: env()});
    expect(r.status).toBe(1);
    r = runCli(['conda', 'hook', 'install', '12.3', '-p', envT, '--ld-library-path', 'none'], {env: env()});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('LD_LIBRARY_PATH: left alone');
  });

  test('a library that is broken with or without the hook is reported, not held against it', () => {
    const envX = makeCondaPrefix(join(tmp.dir, 'miniforge', 'envs', 'broken'), 'X');
    const dep = buildLib({out: join(tmp.dir, 'gone-dep', 'libgonedep.so.1'), soname: 'libgonedep.so.1', source: 'int gone(void){return 1;}\n'});
    const broken = buildLib({out: join(envX, 'lib', 'libbroken.so.1'), soname: 'libbroken.so.1', source: 'int gone(void);\nint f(void){return gone();}\n', link: [dep]});
    spawnSync('rm', ['-rf', join(tmp.dir, 'gone-dep')]);
    const r = runCli(['conda', 'hook', 'install', '12.4', '-p', envX, '--json'], {env: env()});
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.check.problems).toEqual([]);
    expect(j.check.existing).toContainEqual(expect.objectContaining({kind: 'not-found', object: broken, library: 'libgonedep.so.1'}));
  });

  test('the shell\'s LD_PRELOAD is loaded as in any program of the environment: its problems are reported, with the hook and without', () => {
    const envP = makeCondaPrefix(join(tmp.dir, 'miniforge', 'envs', 'preload'), 'P');
    buildLib({out: join(envP, 'lib', 'libplain.so.1'), soname: 'libplain.so.1', source: 'int p(void){return 1;}\n'});
    const dep = buildLib({out: join(tmp.dir, 'pre-dep', 'libpredep.so.1'), soname: 'libpredep.so.1', source: 'int pd(void){return 1;}\n'});
    const pre = buildLib({out: join(tmp.dir, 'pre', 'libpre.so.1'), soname: 'libpre.so.1', source: 'int pd(void);\nint q(void){return pd();}\n', link: [dep]});
    spawnSync('rm', ['-rf', join(tmp.dir, 'pre-dep')]);
    // As bin/cudaenv hands the user's LD_PRELOAD on (Node itself starts without it).
    const r = runCli(['conda', 'hook', 'install', '12.4', '-p', envP, '--json'], {env: {...env(), CUDAENV_USER_VARS: 'LD_PRELOAD', CUDAENV_USER_LD_PRELOAD: pre}});
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.check.problems).toEqual([]);
    expect(j.check.existing).toContainEqual(expect.objectContaining({kind: 'not-found', object: pre, library: 'libpredep.so.1'}));
  });
});

describeIf(HAVE_GCC && HAVE_LDD && PYTHON_EXE !== null, 'needs gcc, ldd and python3 (apt-get install gcc libc-bin python3)')('the install-time check models the environment\'s Python loading the wheels', () => {
  let envS: string;
  let user: string;
  let heavyDir: string;
  const runPython = (lib: string, ld?: string) => {
    const e: NodeJS.ProcessEnv = {...process.env};
    delete e.LD_LIBRARY_PATH;
    if (ld !== undefined) e.LD_LIBRARY_PATH = ld;
    return spawnSync(join(envS, 'bin', 'python3'), ['-c', 'import ctypes, sys; ctypes.CDLL(sys.argv[1])', lib], {encoding: 'utf8', env: e});
  };

  beforeAll(() => {
    envS = makeCondaPrefix(join(tmp.dir, 'miniforge', 'envs', 'statictls'), 'S');
    spawnSync('ln', ['-s', PYTHON_EXE!, join(envS, 'bin', 'python3')]);
    const wheel = join(envS, 'lib', 'python3.11', 'site-packages', 'nvidia', 'tlsuser', 'lib');
    // The wheel's own copy of the dependency keeps its thread-locals to itself; the toolkit's copy,
    // as libgomp or an OpenMP runtime, reaches them as initial-exec: 64 KB, past any static TLS surplus.
    const dep = buildLib({out: join(wheel, 'libtlsdep.so.1'), soname: 'libtlsdep.so.1', source: 'int tls_fn(void){return 1;}\n'});
    user = buildLib({
      out: join(wheel, 'libtlsuser.so'), soname: 'libtlsuser.so', source: 'int tls_fn(void);\nint user_fn(void){return tls_fn();}\n',
      link: [dep], runpath: '$ORIGIN',
    });
    makeFakeToolkit(join(store, 'versions', '12.6.3'), {version: '12.6.3'});
    heavyDir = join(store, 'versions', '12.6.3', 'lib64');
    buildLib({
      out: join(heavyDir, 'libtlsdep.so.1'), soname: 'libtlsdep.so.1',
      source: '__thread char big[65536] __attribute__((tls_model("initial-exec")));\nint tls_fn(void){return big[0];}\n',
    });
  });

  test('the real loaders: ldd -r sees nothing wrong either way; Python\'s dlopen fails only with the toolkit first on LD_LIBRARY_PATH', () => {
    expect(lddVerdict(user).raw).not.toMatch(/undefined|not found|error/);
    expect(lddVerdict(user, heavyDir).raw).not.toMatch(/undefined|not found|error/);
    expect(lddVerdict(user, heavyDir).libs).toContainEqual(`libtlsdep.so.1 => ${join(heavyDir, 'libtlsdep.so.1')}`);
    expect(runPython(user).status).toBe(0);
    const r = runPython(user, heavyDir);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`${join(heavyDir, 'libtlsdep.so.1')}: cannot allocate memory in static TLS block`);
  });

  test('refuses the hook whose LD_LIBRARY_PATH makes the wheel\'s library unloadable in Python, and writes nothing', () => {
    const r = runCli(['conda', 'hook', 'install', '12.6', '-p', envS], {env: env()});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`not installing the hook: with CUDA 12.6.3's libraries first on LD_LIBRARY_PATH, libraries of the conda environment ${envS} would fail to load:`);
    expect(r.stderr).toContain('static TLS');
    expect(r.stderr).toContain(join(heavyDir, 'libtlsdep.so.1'));
    expect(r.stderr).toContain(`cudaenv conda hook install 12.6.3 -p ${envS} --ld-library-path none`);
    for (const f of allHookFiles(envS)) expect(existsSync(f)).toBe(false);
    const j = JSON.parse(runCli(['conda', 'hook', 'install', '12.6', '-p', envS, '--force', '--json'], {env: env()}).stdout);
    expect(j.check.interpreter).toBe(realpathSync(PYTHON_EXE!));
    expect(j.check.problems).toEqual([expect.objectContaining({kind: 'static-tls'})]);
    expect(j.check.existing).toEqual([]);
    runCli(['conda', 'hook', 'uninstall', '-p', envS], {env: env()});
  });

  test('without an interpreter in the environment the wheels are checked as `ldd -r` loads them, which cannot see it', () => {
    rmSync(join(envS, 'bin', 'python3'));
    try {
      const r = runCli(['conda', 'hook', 'install', '12.6', '-p', envS, '--json'], {env: env()});
      expect(r.status).toBe(0);
      const j = JSON.parse(r.stdout);
      expect(j.check).toMatchObject({interpreter: null, problems: []});
      runCli(['conda', 'hook', 'uninstall', '-p', envS], {env: env()});
    } finally {
      spawnSync('ln', ['-s', PYTHON_EXE!, join(envS, 'bin', 'python3')]);
    }
  });
});
