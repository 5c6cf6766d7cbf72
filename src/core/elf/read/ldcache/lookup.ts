/**
 * ld.so's cache lookup (`search_cache`, elf/dl-cache.c; elf-loader-spec §2.6), over entries in file
 * order: the first acceptable normal entry wins, except that a glibc-hwcaps entry for an active
 * subdirectory (they come first) beats it, the best-ranked subdirectory winning.
 */
import {flagsAccepted} from './flags.js';
import {hostX86IsaLevel, x86HwcapsSubdirs} from './isa.js';
import type {LdCache, LdCacheEntry} from './types.js';

export interface CacheLookupOptions {
  elfClass: 32 | 64;
  /** e_machine of the process (EM_X86_64 62, EM_AARCH64 183, ...). */
  machine: number;
  /** x86-64 ISA level of the target CPU (1-4); default: this machine's when it is x86-64, else 2. */
  isaLevel?: number;
  /** Active glibc-hwcaps subdirectories, best first; default: derived from the ISA level on x86-64, none elsewhere. */
  hwcapsSubdirs?: string[];
  /**
   * glibc <= 2.36 also takes legacy hwcap entries whose bits are among these (dl_hwcap & mask,
   * the platform bit, TLS); undefined: ignore them, as glibc >= 2.37 does.
   */
  legacyHwcap?: {important: bigint; platformBit: bigint | null};
}

const HWCAP_PLATFORM_MASK = 0xffn << 48n;
const HWCAP_TLS = 1n << 63n;

/** search_cache of glibc <= 2.36: is this legacy entry for hwcaps the CPU has? */
function legacyAccepted(e: LdCacheEntry, legacy: NonNullable<CacheLookupOptions['legacyHwcap']>): boolean {
  const hwcap = BigInt(e.hwcap);
  if ((hwcap & ~(legacy.important | HWCAP_PLATFORM_MASK | HWCAP_TLS)) !== 0n) return false;
  const plat = hwcap & HWCAP_PLATFORM_MASK;
  return plat === 0n || plat === legacy.platformBit;
}

const byKey = new WeakMap<LdCache, Map<string, LdCacheEntry[]>>();

/** `_dl_cache_libcmp` equality: runs of digits compare as numbers, so libfoo.so.01 is libfoo.so.1. */
export function normalizeCacheKey(name: string): string {
  // Only a run of digits that starts with 0 and goes on changes: the common name is returned as it is.
  if (!/(?:^|\D)0\d/.test(name)) return name;
  return name.replace(/\d+/g, (digits) => digits.replace(/^0+(?=\d)/, ''));
}

/** Every entry registered under `name`, in file order (for explaining what the cache holds). */
export function cacheCandidates(cache: LdCache, name: string): LdCacheEntry[] {
  let index = byKey.get(cache);
  if (!index) {
    index = new Map();
    for (const e of cache.entries) {
      const k = normalizeCacheKey(e.key);
      const list = index.get(k);
      if (list) list.push(e);
      else index.set(k, [e]);
    }
    byKey.set(cache, index);
  }
  return index.get(normalizeCacheKey(name)) ?? [];
}

/** The path ld.so would take from the cache for `name`, or null. The caller still applies open/class checks (§1.8) and DF_1_NODEFLIB. */
export function lookupCache(cache: LdCache, name: string, options: CacheLookupOptions): string | null {
  return lookupCacheEntry(cache, name, options)?.path ?? null;
}

/** The whole entry behind lookupCache's answer (flags, hwcaps subdirectory). */
export function lookupCacheEntry(cache: LdCache, name: string, options: CacheLookupOptions): LdCacheEntry | null {
  const x8664 = options.machine === 62 && options.elfClass === 64;
  const isaLevel = options.isaLevel ?? (x8664 ? hostX86IsaLevel() ?? 2 : 0);
  const active = options.hwcapsSubdirs ?? (x8664 ? x86HwcapsSubdirs(isaLevel) : []);
  const defaultFlags = options.machine === 62 ? (options.elfClass === 64 ? 0x0303 : 0x0803)
    : options.machine === 183 && options.elfClass === 64 ? 0x0a03 : 3;
  let best: LdCacheEntry | null = null;
  let bestPriority = 0;
  for (const e of cacheCandidates(cache, name)) {
    if (!flagsAccepted(e.flags, options.elfClass, options.machine)) continue;
    const named = e.hwcapsSubdir !== null;
    // The cache stores the level's bit number: 0 baseline, 1 v2, 2 v3, 3 v4 (dl_cache_hwcap_isa_level_compatible).
    if (named && x8664 && e.isaLevel + 1 > isaLevel) continue;
    if (!named && best !== null) break;
    // Legacy hwcap entries: ignored from glibc 2.37 on; before, taken when the CPU has those hwcaps.
    if (!named && e.legacyHwcap && (!options.legacyHwcap || !legacyAccepted(e, options.legacyHwcap))) continue;
    if (named) {
      const priority = active.indexOf(e.hwcapsSubdir!) + 1;
      if (priority === 0 || (best !== null && priority >= bestPriority)) continue;
      bestPriority = priority;
    }
    best = e;
    if (!named && e.flags === defaultFlags) break;
  }
  return best;
}
