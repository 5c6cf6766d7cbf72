/**
 * The ld.so.cache reader's public surface (implementation in ./ldcache/): `loadLdCache(file?)`
 * reads /etc/ld.so.cache in any of its layouts (or `ldconfig -p` output as the fallback), and
 * `lookupCache` answers a name as ld.so's search_cache would. elf-loader-spec §2.
 */
export {loadLdCache, DEFAULT_LD_CACHE, type LoadLdCacheOptions} from './ldcache/load.js';
export {lookupCache, lookupCacheEntry, cacheCandidates, normalizeCacheKey, type CacheLookupOptions} from './ldcache/lookup.js';
export {parseCacheBuffer, CacheFormatError} from './ldcache/binary.js';
export {parseLdconfigOutput, formatLdconfigLine} from './ldcache/ldconfig-p.js';
export {hostX86IsaLevel, isaLevelFromFlags, x86HwcapsSubdirs} from './ldcache/isa.js';
export {flagsAccepted, flagsLabel} from './ldcache/flags.js';
export type {LdCache, LdCacheEntry} from './ldcache/types.js';
