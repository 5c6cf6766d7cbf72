/**
 * Builds a machine state for doctor under a temporary root: CUDAENV_SYSROOT files, a store,
 * toolkits with real ELF libraries compiled by gcc, and a Python environment laid out like pip.
 */
import {afterAll, afterEach, beforeAll, beforeEach} from '@jest/globals';
import {execFileSync, spawnSync} from 'node:child_process';
import {chmodSync, mkdirSync, symlinkSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {pathsFor, type StorePaths} from '../../../src/core/store/paths.js';
import type {DoctorContext} from '../../../src/core/doctor/types.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {makeTempDir, type TempDir} from '../../helpers/tmp.js';

export const HAVE_GCC = spawnSync('gcc', ['--version']).status === 0;
export const HAVE_LDCONFIG = spawnSync('ldconfig', ['--version']).status === 0;

export const PROC_PROPRIETARY = 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n';
export const PROC_OPEN = 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue May 20 2025\nGCC version:  gcc version 12.2.0\n';

export function write(path: string, text: string, mode?: number): string {
  mkdirSync(dirname(path), {recursive: true});
  writeFileSync(path, text);
  if (mode !== undefined) chmodSync(path, mode);
  return path;
}

export interface Machine {
  root: string;
  sysroot: string;
  paths: StorePaths;
  /** A directory for programs put on PATH (python3, nvidia-smi). */
  bin: string;
  env: NodeJS.ProcessEnv;
  ctx(extra?: Partial<DoctorContext>): DoctorContext;
}

/** A bare machine: empty sysroot, empty store, PATH holding only the test's bin and the system's. */
export function makeMachine(root: string): Machine {
  const sysroot = join(root, 'sys');
  const paths = pathsFor(join(root, 'store'));
  const bin = join(root, 'bin');
  mkdirSync(sysroot, {recursive: true});
  mkdirSync(paths.versions, {recursive: true});
  mkdirSync(bin, {recursive: true});
  // Only the test's own programs: a host nvcc or python must not leak into the machine state.
  const env: NodeJS.ProcessEnv = {PATH: bin, HOME: root, CUDAENV_DIR: paths.root, CUDAENV_SYSROOT: sysroot};
  const m: Machine = {
    root, sysroot, paths, bin, env,
    ctx: (extra = {}) => ({env: m.env, cwd: root, paths, sysroot, ...extra}),
  };
  return m;
}

/**
 * A bare machine in a fresh temporary directory for each test of the enclosing describe block
 * ('each') or one for the whole block ('all'), removed after it. `use` gets both, to set the
 * block's own variables (and to add to the machine before each test).
 */
export function withMachine(scope: 'each' | 'all', use: (m: Machine, tmp: TempDir) => void): void {
  let tmp: TempDir | undefined;
  (scope === 'each' ? beforeEach : beforeAll)(() => {
    tmp = makeTempDir();
    use(makeMachine(tmp.dir), tmp);
  });
  (scope === 'each' ? afterEach : afterAll)(() => tmp?.cleanup());
}

/** A toolkit installed in the store (a real directory, as `cudaenv install` leaves it). */
export function installVersion(m: Machine, label: string): string {
  return makeFakeToolkit(join(m.paths.versions, label), {version: label});
}

export function setGlobal(m: Machine, spec: string): void {
  writeFileSync(m.paths.globalFile, `${spec}\n`);
}

/** A toolkit under the sysroot's /usr/local, optionally made /usr/local/cuda's target. */
export function systemToolkit(m: Machine, label: string, link = false): string {
  const short = label.split('.').slice(0, 2).join('.');
  const dir = makeFakeToolkit(join(m.sysroot, 'usr', 'local', `cuda-${short}`), {version: label});
  if (link) symlinkSync(`/usr/local/cuda-${short}`, join(m.sysroot, 'usr', 'local', 'cuda'));
  return dir;
}

/** A fake interpreter that prints sys.path as the real one would (`python -c` with json). */
/**
 * A `python3` on the machine's PATH that answers cudaenv's question with `sysPath`: a shell script,
 * which no process starts as (doctor then checks the wheels as `ldd` loads them), unless it says
 * its sys.executable is `executable` (a real interpreter binary, as a pyenv shim's python would).
 */
export function fakePython(m: Machine, sysPath: string[], name = 'python3', executable?: string): string {
  const answer = executable ? {path: ['', ...sysPath], executable} : ['', ...sysPath];
  return write(join(m.bin, name), `#!/bin/sh\necho '${JSON.stringify(answer)}'\n`, 0o755);
}

export function torchVersionPy(sitePackages: string, version: string, cuda: string | null): void {
  write(join(sitePackages, 'torch', 'version.py'), `from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']
__version__ = '${version}'
debug = False
cuda: Optional[str] = ${cuda === null ? 'None' : `'${cuda}'`}
git_version = '32f585d9346e316e554c8d9bf7548af9f62141fc'
hip: Optional[str] = None
xpu: Optional[str] = None
`);
}

export interface LibSpec {
  /** Output file, e.g. .../libnvJitLink.so.12 */
  out: string;
  soname: string;
  /** C source. */
  source: string;
  /** A version script's text. */
  versionScript?: string;
  /** Libraries to link against: full paths (linked with -l:NAME -L DIR). */
  link?: string[];
  rpath?: string;
  /** DT_RUNPATH instead of DT_RPATH. */
  runpath?: boolean;
}

/** Compiles a real shared library with gcc. */
export function buildLib(spec: LibSpec): string {
  mkdirSync(dirname(spec.out), {recursive: true});
  const src = `${spec.out}.c`;
  writeFileSync(src, spec.source);
  const args = ['-shared', '-fPIC', '-o', spec.out, src, `-Wl,-soname,${spec.soname}`];
  if (spec.versionScript) {
    const vs = `${spec.out}.map`;
    writeFileSync(vs, spec.versionScript);
    args.push(`-Wl,--version-script,${vs}`);
  }
  for (const lib of spec.link ?? []) args.push(`-L${dirname(lib)}`, `-l:${lib.split('/').pop()}`);
  if (spec.rpath) args.push(`-Wl,-rpath,${spec.rpath}`, spec.runpath ? '-Wl,--enable-new-dtags' : '-Wl,--disable-new-dtags');
  execFileSync('gcc', args, {stdio: 'pipe'});
  return spec.out;
}

/**
 * The seed failure: pip's libcusparse.so.12 (RUNPATH $ORIGIN/../../nvjitlink/lib) needs
 * __nvJitLinkComplete_12_4@libnvJitLink.so.12; an older toolkit's libnvJitLink.so.12 lacks it.
 * Returns the old toolkit's lib64 and the site-packages directory.
 */
export function seedFailure(m: Machine, oldToolkit: string): {oldLib: string; sitePackages: string} {
  const sitePackages = join(m.root, 'venv', 'lib', 'python3.12', 'site-packages');
  const jitNew = buildLib({
    out: join(sitePackages, 'nvidia', 'nvjitlink', 'lib', 'libnvJitLink.so.12'),
    soname: 'libnvJitLink.so.12',
    source: 'int __nvJitLinkCreate_12_3(void){return 1;}\nint __nvJitLinkComplete_12_4(void){return 2;}\n',
    versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkCreate_12_3; __nvJitLinkComplete_12_4; local: *; };\n',
  });
  buildLib({
    out: join(sitePackages, 'nvidia', 'cusparse', 'lib', 'libcusparse.so.12'),
    soname: 'libcusparse.so.12',
    source: 'extern int __nvJitLinkComplete_12_4(void);\nint cusparseCreate(void){return __nvJitLinkComplete_12_4();}\n',
    link: [jitNew],
    rpath: '$ORIGIN/../../nvjitlink/lib',
    runpath: true,
  });
  const oldLib = join(oldToolkit, 'lib64');
  buildLib({
    out: join(oldLib, 'libnvJitLink.so.12'),
    soname: 'libnvJitLink.so.12',
    source: 'int __nvJitLinkCreate_12_3(void){return 1;}\n',
    versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkCreate_12_3; local: *; };\n',
  });
  return {oldLib, sitePackages};
}
