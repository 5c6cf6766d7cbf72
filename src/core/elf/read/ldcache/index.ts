/**
 * The ld.so.cache reader's public surface (implementation in ./ldcache/): `loadLdCache(file?)`
 * reads /etc/ld.so.cache in any of its layouts (or `ldconfig -p` output as the fallback), and
 * `lookupCache` answers a name as ld.so's search_cache would. elf-loader-spec §2.
 */
export {loadLdCache, DEFAULT_LD_CACHE, type LoadLdCacheOptions} from './load.js';
export {lookupCache, lookupCacheEntry, cacheCandidates, normalizeCacheKey, type CacheLookupOptions} from './lookup.js';
export {parseCacheBuffer, CacheFormatError} from './binary.js';
export {parseLdconfigOutput, formatLdconfigLine} from './ldconfig-p.js';
export {hostX86IsaLevel, isaLevelFromFlags, x86HwcapsSubdirs} from './isa.js';
export {flagsAccepted, flagsLabel} from './flags.js';
export type {LdCache, LdCacheEntry} from './types.js';
