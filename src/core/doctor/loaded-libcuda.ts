/**
 * Which libcuda.so.1 programs here actually load, and whether it is the toolkit's stub: the
 * library the loader model gave libcudart's dlopen in this environment's checks, else the one the
 * loader's search order picks for a program started with this environment (LD_PRELOAD,
 * LD_LIBRARY_PATH, ld.so.cache, the default directories), never the first file found by name.
 */
import {realpathSync, statSync} from 'node:fs';
import {dirname, isAbsolute, join} from 'node:path';
import {splitLdLibraryPath, type CheckReport} from '../elf/api.js';
import {quoteSh} from '../text/quote.js';
import {engineOptions, type CheckFn} from './libraries.js';
import {readLdSoConf} from './ld-so-conf.js';
import {displayPath, sysPath, sysRealpath} from './sysroot.js';
import type {DoctorContext, Finding} from './types.js';

export interface LoadedLibcuda {
  path: string;
  /** How the loader finds it: "LD_PRELOAD entry /x", "LD_LIBRARY_PATH entry /x", "ld.so.cache", "DT_RPATH entry ... of ...". */
  rule: string;
  via: 'preload' | 'ld_library_path' | 'ld.so.cache' | 'default' | 'rpath' | 'runpath' | 'loaded' | null;
  /** The CUDA toolkit's link-time stub: every CUDA call fails with error 34, cudaErrorStubLibrary. */
  stub: boolean;
}

/** Error 34's words, as the CUDA runtime prints them. */
export const STUB_ERROR = 'error 34, "CUDA driver is a stub library" (cudaErrorStubLibrary)';

/** glibc's default directories on x86-64 (Debian's multiarch ones first, as its ld.so searches them). */
const DEFAULT_DIRS = ['/lib/x86_64-linux-gnu', '/usr/lib/x86_64-linux-gnu', '/lib64', '/usr/lib64', '/lib', '/usr/lib'];

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** The libcuda.so.1 the checks' processes bound: libcudart's dlopen first (what the first CUDA call gets), then any DT_NEEDED. */
function fromReports(reports: CheckReport[]): Omit<LoadedLibcuda, 'stub'> | undefined {
  let needed: Omit<LoadedLibcuda, 'stub'> | undefined;
  for (const r of reports) {
    for (const o of r.objects) {
      for (const e of o.needed) {
        if (e.name !== 'libcuda.so.1' || !e.path) continue;
        const found = {path: e.path, rule: e.rule ?? e.via ?? 'the loader', via: e.via};
        if (e.dlopen) return found;
        needed ??= found;
      }
    }
  }
  return needed;
}

/** The search a program started here makes for libcuda.so.1 (no object's own RPATH: a plain program's). */
async function bySearch(ctx: DoctorContext, cacheLibcuda: string | undefined, check: CheckFn): Promise<Omit<LoadedLibcuda, 'stub'> | undefined> {
  for (const entry of (ctx.env.LD_PRELOAD ?? '').split(/[\s:]+/).filter((e) => e !== '' && isAbsolute(e) && isFile(e))) {
    const soname = await sonameOf(ctx, entry, check);
    if (soname === 'libcuda.so.1') return {path: entry, rule: `LD_PRELOAD entry ${entry}`, via: 'preload'};
  }
  for (const entry of splitLdLibraryPath(ctx.env.LD_LIBRARY_PATH)) {
    const file = join(entry === '' ? ctx.cwd : entry, 'libcuda.so.1');
    if (isFile(file)) return {path: file, rule: `LD_LIBRARY_PATH entry ${entry}`, via: 'ld_library_path'};
  }
  if (cacheLibcuda) return {path: cacheLibcuda, rule: 'ld.so.cache', via: 'ld.so.cache'};
  for (const dir of DEFAULT_DIRS) {
    const file = sysRealpath(ctx, join(dir, 'libcuda.so.1'));
    if (file && isFile(file)) return {path: sysPath(ctx, join(dir, 'libcuda.so.1')), rule: `default directory ${dir}`, via: 'default'};
  }
  return undefined;
}

async function sonameOf(ctx: DoctorContext, file: string, check: CheckFn): Promise<string | null | undefined> {
  return (await describe(ctx, file, check))?.soname;
}

/** The file's soname and how many libraries it needs, read by the check engine (cached as `check` caches it). */
async function describe(ctx: DoctorContext, file: string, check: CheckFn): Promise<{soname: string | null; needed: number} | undefined> {
  try {
    const r = await check({...engineOptions(ctx), targets: [file], runtimeLoads: false});
    const o = r.objects.find((x) => real(x.path) === real(file)) ?? r.objects[0];
    return o ? {soname: o.soname, needed: o.needed.filter((e) => !e.dlopen).length} : undefined;
  } catch {
    return undefined;
  }
}

export async function loadedLibcuda(ctx: DoctorContext, reports: CheckReport[], cacheLibcuda: string | undefined, check: CheckFn): Promise<LoadedLibcuda | undefined> {
  const found = fromReports(reports) ?? await bySearch(ctx, cacheLibcuda, check);
  if (!found) return undefined;
  const d = await describe(ctx, found.path, check);
  // NVIDIA's stub imports nothing; the driver's libcuda needs the C library like any program (runtime/release-checks.ts isCudaStub).
  return {...found, stub: d !== undefined && d.soname === 'libcuda.so.1' && d.needed === 0};
}

/** What removes the stub from this route. */
function stubFix(ctx: DoctorContext, found: LoadedLibcuda): string {
  const then = 'so that the driver\'s libcuda.so.1 is found';
  if (found.via === 'preload') {
    const rest = (ctx.env.LD_PRELOAD ?? '').split(/[\s:]+/).filter((e) => e !== '' && real(e) !== real(found.path));
    return `${rest.length > 0 ? `export LD_PRELOAD=${quoteSh(rest.join(' '))}` : 'unset LD_PRELOAD'} (take ${found.path} out of LD_PRELOAD), ${then}`;
  }
  if (found.via === 'ld_library_path') {
    const dir = dirname(found.path);
    const rest = splitLdLibraryPath(ctx.env.LD_LIBRARY_PATH).filter((e) => e !== '' && real(e) !== real(dir));
    return `${rest.length > 0 ? `export LD_LIBRARY_PATH=${quoteSh(rest.join(':'))}` : 'unset LD_LIBRARY_PATH'} (drop ${dir}), ${then}`;
  }
  if (found.via === 'ld.so.cache') {
    const dir = real(dirname(found.path));
    const conf = readLdSoConf(ctx).find((c) => real(sysRealpath(ctx, c.dir) ?? c.dir) === dir);
    return conf
      ? `remove ${conf.dir} from ${conf.file} (line ${conf.line}: a stubs directory must not be in the loader's configuration), then run \`sudo ldconfig\`, ${then}`
      : `run \`sudo ldconfig\` (the cache still names ${displayPath(ctx, found.path)}), ${then}`;
  }
  if (found.via === 'rpath' || found.via === 'runpath') return `remove ${dirname(found.path)} from the ${found.via === 'rpath' ? 'DT_RPATH' : 'DT_RUNPATH'} named in "${found.rule}" (\`patchelf --set-rpath\`), ${then}`;
  return `remove ${displayPath(ctx, found.path)} (the stub copied over the driver's library) and reinstall the driver's libcuda package, ${then}`;
}

/** The stub, by whatever route it comes, when no check of a libcudart here has said so already. */
export function stubFinding(ctx: DoctorContext, found: LoadedLibcuda): Finding {
  return {
    id: 'driver.stub-library',
    severity: 'error',
    title: `Programs here load the CUDA toolkit's stub libcuda.so.1, ${displayPath(ctx, found.path)}: every CUDA call fails with ${STUB_ERROR}`,
    evidence: [
      `loader picks: ${displayPath(ctx, found.path)} (${found.rule})`,
      `${displayPath(ctx, found.path)} is the CUDA toolkit's link-time stub of libcuda.so.1 (it imports nothing: no DT_NEEDED, no symbol versions), not the NVIDIA driver's library: ` +
        'it exists only for linking, and every entry point returns CUDA_ERROR_STUB_LIBRARY (34)',
    ],
    fix: stubFix(ctx, found),
  };
}
