import {checkLibraries} from '../elf/index.js';
import {loadLdCache, lookupCache} from '../elf/api.js';
import type {DoctorDeps, LoaderCache} from './index.js';

/** e_machine of the running Node's architecture, for cache lookups (the cache holds every ABI). */
function hostMachine(): number | undefined {
  return ({x64: 62, arm64: 183, ppc64: 21} as Record<string, number>)[process.arch];
}

/**
 * The real engines doctor runs on: the check engine (the same loader model as `cudaenv check`,
 * without the sysroot, so system libraries such as libc resolve as on this machine) and the
 * ld.so.cache reader.
 */
export const defaultDeps: DoctorDeps = {
  check: (options) => checkLibraries(options),
  async readCache(file: string): Promise<LoaderCache | undefined> {
    const cache = loadLdCache(file);
    // 'ldconfig-p' is the same file read through `ldconfig -p -C FILE` (a layout the parser refused).
    if (cache.format === 'missing') return undefined;
    const machine = hostMachine();
    const entries = cache.entries.filter((e) => e.elfClass === null || e.elfClass === 64).map((e) => ({key: e.key, path: e.path}));
    const hit = machine === undefined ? undefined : lookupCache(cache, 'libcuda.so.1', {elfClass: 64, machine});
    return {entries, libcuda: hit ?? undefined};
  },
};
