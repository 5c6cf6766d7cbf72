import {realpathSync} from 'node:fs';
import {basename} from 'node:path';
import type {LoadedObject, LoaderProcess} from '../search/loader-process.js';
import {kernelDriverVersion, libcudaContentsVersion} from '../read/machine/nvidia-driver.js';
import {readElfSync} from '../read/elf/index.js';
import {libcudaVersion} from '../../versions/driver-version.js';
import {compareDriverVersions, driverSupport} from '../../versions/driver-table.js';

/**
 * What a run-time load brings that the loader accepts and the library still cannot use:
 * - 'cuda-stub': the toolkit's link-time stub in place of the driver's libcuda (every CUDA call
 *   fails with cudaErrorStubLibrary, "CUDA driver is a stub library");
 * - 'driver-mismatch': a libcuda of another release than the kernel module (a cuda-compat library
 *   for an older module loaded on a newer one; cudaErrorSystemDriverMismatch);
 * - 'driver-too-old': a libcuda older than the toolkit of the caller needs (cudaErrorInsufficientDriver);
 * - 'mixed-release': parts that must come from one release do not (libnvrtc and its builtins,
 *   cuDNN and its parts).
 */
export interface ReleaseCheck {
  kind: 'cuda-stub' | 'driver-mismatch' | 'driver-too-old' | 'mixed-release';
  /** The loaded file the check is about. */
  object: LoadedObject;
  /** The facts in words, for the explanation. */
  detail: string;
  /** For 'mixed-release': each side's version and the file it came from. */
  sides?: Array<{path: string; version: string}>;
}

/** The real file's name: a SONAME link (libcuda.so.1) leads to libcuda.so.550.54.15 (realpath(3): one call, not an lstat per component). */
function realName(p: LoaderProcess, path: string): string {
  try {
    return basename(realpathSync.native(p.ctx.view.hostPath(path) ?? path));
  } catch {
    return basename(path);
  }
}

/** libcudnn_graph.so.9.1.0 -> 9.1.0; null without a full version in the name. */
function fileVersion(name: string): string | null {
  return /\.so\.(\d+(?:\.\d+){1,3})$/.exec(name)?.[1] ?? null;
}

/**
 * NVIDIA's link-time stub of libcuda.so.1 defines every driver entry point and imports nothing:
 * no DT_NEEDED, no version needs (CUDA 12.4's lib64/stubs/libcuda.so, from Debian's
 * nvidia-cuda-dev). The driver's libcuda needs the C library like any program.
 */
export function isCudaStub(obj: LoadedObject): boolean {
  return obj.info.soname === 'libcuda.so.1' && obj.info.needed.length === 0 && obj.info.versionNeeds.length === 0;
}

function definesName(obj: LoadedObject, name: string): boolean {
  const lookup = obj.info.lookup;
  if (lookup) return lookup.find(name).length > 0;
  return (obj.info.symbols ?? []).some((s) => s.name === name && s.defined);
}

/** The release a libcuda.so.1 is, from its contents; its name only where they say nothing (a renamed 550 library called libcuda.so.470.57.02 is still 550). */
function libcudaRelease(p: LoaderProcess, loaded: LoadedObject): string | null {
  return libcudaContentsVersion(p.ctx.view.hostPath(loaded.path) ?? loaded.path, loaded.inode) ?? libcudaVersion(realName(p, loaded.path)) ?? null;
}

/** What is wrong with a libcuda.so.1 whoever loads it: the toolkit's stub, or another release than the kernel module. */
export function libcudaChecks(p: LoaderProcess, loaded: LoadedObject): ReleaseCheck[] {
  if (isCudaStub(loaded)) {
    return [{kind: 'cuda-stub', object: loaded, detail: `${loaded.path} is the CUDA toolkit's link-time stub of libcuda.so.1 (it imports nothing: no DT_NEEDED, no symbol versions), not the NVIDIA driver's library`}];
  }
  const version = libcudaRelease(p, loaded);
  const kernel = kernelDriverVersion(p.platform.sysroot);
  if (version && kernel && version !== kernel) {
    const compat = /\/compat\//.test(loaded.path) || /\/compat\//.test(realName(p, loaded.path));
    if (!compat || compareDriverVersions(version, kernel) < 0) {
      return [{kind: 'driver-mismatch', object: loaded, detail: compat
        ? `${loaded.path} is a cuda-compat libcuda ${version}, made for kernel modules older than itself; this machine runs module ${kernel}, which is newer`
        : `${loaded.path} is libcuda ${version}; this machine's kernel module is ${kernel}: the two must be one release`}];
    }
  }
  return [];
}

/**
 * The libcuda.so.1 a process loads at its start (a DT_NEEDED, as PyCUDA's and pyvkfft's extension
 * modules have, or a preload), checked as a dlopen's is: the stub by this route too (issue 42).
 * `said`: the files (device:inode) a run-time load's checks already judge (libcudart's dlopen of the
 * loaded stub says it with the call that fails), left out so that one file is one problem.
 */
export function startLibcudaChecks(p: LoaderProcess, said: ReadonlySet<string> = new Set()): ReleaseCheck[] {
  return p.scope.slice(0, p.startupScopeLength)
    .filter((o) => o.info.soname === 'libcuda.so.1' && o.role !== 'interp' && o.role !== 'main' && !said.has(o.inode))
    .flatMap((o) => libcudaChecks(p, o));
}

/** The checks that apply to `loaded`, brought by `caller`'s dlopen in `p`. */
export function releaseChecks(p: LoaderProcess, caller: LoadedObject, loaded: LoadedObject): ReleaseCheck[] {
  const checks: ReleaseCheck[] = [];
  const callerName = caller.info.soname ?? basename(caller.path);
  if (loaded.info.soname === 'libcuda.so.1') {
    if (isCudaStub(loaded)) return libcudaChecks(p, loaded);
    checks.push(...libcudaChecks(p, loaded));
    const version = libcudaRelease(p, loaded);
    const cudart = /^libcudart\.so\.(\d+)\.(\d+)\./.exec(realName(p, caller.path));
    if (version && cudart) {
      const toolkit = `${cudart[1]}.${cudart[2]}.0`;
      const support = driverSupport(version, toolkit);
      if (support.kind === 'too-old') {
        checks.push({kind: 'driver-too-old', object: loaded, detail: `${loaded.path} is libcuda ${version}; ${callerName} of CUDA ${cudart[1]}.${cudart[2]} needs driver ${support.required.driver} or later${support.floor ? ` (${support.floor} through minor-version compatibility)` : ''}`});
      }
    }
  }
  const builtins = /^libnvrtc-builtins\.so\.(\d+)\.(\d+)$/.exec(loaded.names[0] ?? '');
  if (builtins && /^libnvrtc\.so\./.test(callerName)) {
    const entry = `__nvrtc_builtins__${builtins[1]}_${builtins[2]}_getBuiltinHeader`;
    if (!definesName(loaded, entry)) {
      checks.push({kind: 'mixed-release', object: loaded, detail: `${callerName} asks ${loaded.path} for ${entry}, which it does not define: it is not the builtins of NVRTC ${builtins[1]}.${builtins[2]}`,
        sides: [{path: caller.path, version: `${builtins[1]}.${builtins[2]}`}, {path: loaded.path, version: builtinsRelease(p, loaded) ?? 'another release'}]});
    }
  }
  const mixed = sameReleaseSides(p, caller, loaded);
  if (mixed) checks.push(mixed);
  return checks;
}

/** The release a builtins library serves, from its own entry points (__nvrtc_builtins__12_4_getBuiltinHeader). */
function builtinsRelease(p: LoaderProcess, obj: LoadedObject): string | null {
  try {
    // Read in full only here, for a builtins library that does not fit (a few hundred symbols).
    const {symbols} = readElfSync(p.ctx.view.hostPath(obj.path) ?? obj.path, {symbols: true});
    const m = symbols.map((s) => (s.defined ? /^__nvrtc_builtins__(\d+)_(\d+)_/.exec(s.name) : null)).find((x) => x !== null);
    return m ? `${m[1]}.${m[2]}` : null;
  } catch {
    return null;
  }
}

/** Caller and part from one release, where both real file names carry a full version (cuDNN, NVRTC). */
function sameReleaseSides(p: LoaderProcess, caller: LoadedObject, loaded: LoadedObject): ReleaseCheck | null {
  const pairs: Array<[RegExp, RegExp]> = [
    [/^libcudnn\.so\./, /^libcudnn_/],
    [/^libnvrtc\.so\./, /^libnvrtc-builtins\.so\./],
  ];
  const a = realName(p, caller.path);
  const b = realName(p, loaded.path);
  if (!pairs.some(([x, y]) => x.test(a) && y.test(b))) return null;
  const va = fileVersion(a);
  const vb = fileVersion(b);
  if (!va || !vb || va === vb) return null;
  return {kind: 'mixed-release', object: loaded, detail: `${basename(caller.path)} is ${va} and ${basename(loaded.path)} is ${vb}: they must come from one release`,
    sides: [{path: caller.path, version: va}, {path: loaded.path, version: vb}]};
}

/**
 * Libraries one release ships as a pair that only works together, both loaded at start:
 * libcublas needs the libcublasLt of its own build (NVIDIA's wheels pin nvidia-cublas to one
 * version for both files), as libcufftw does libcufft's. Compared by the versions their real file
 * names carry (libcublas.so.12.4.5.8 -> 12.4.5.8); a pair without full versions is not judged.
 */
const PINNED: ReadonlyArray<[RegExp, RegExp]> = [
  [/^libcublas\.so\.\d+$/, /^libcublasLt\.so\.\d+$/],
  [/^libcufftw\.so\.\d+$/, /^libcufft\.so\.\d+$/],
];

export function pinnedPairs(p: LoaderProcess): ReleaseCheck[] {
  const checks: ReleaseCheck[] = [];
  const loaded = p.scope.slice(0, p.startupScopeLength);
  for (const [first, second] of PINNED) {
    const a = loaded.find((o) => first.test(o.info.soname ?? ''));
    const b = loaded.find((o) => second.test(o.info.soname ?? ''));
    if (!a || !b) continue;
    const va = fileVersion(realName(p, a.path));
    const vb = fileVersion(realName(p, b.path));
    if (!va || !vb || va === vb) continue;
    checks.push({kind: 'mixed-release', object: b, detail: `${basename(a.path)} is ${va} and ${basename(b.path)} is ${vb}: NVIDIA ships them as one build, and one needs the other of its own version`,
      sides: [{path: a.path, version: va}, {path: b.path, version: vb}]});
  }
  return checks;
}
