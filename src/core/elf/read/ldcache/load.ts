/**
 * /etc/ld.so.cache: the binary reader, `ldconfig -p` as the fallback, and ld.so's lookup.
 * A missing cache is an empty one, as for ld.so; an unreadable one is read through `ldconfig -p`
 * and, failing that, treated as empty with a warning (ld.so silently ignores it too).
 * Synchronous on purpose: ld.so reads the whole (tens of KB) file too, and the loader model loads
 * it lazily from inside a synchronous lookup.
 */
import {createRequire} from 'node:module';
import {readFileSync, statSync} from 'node:fs';
import {isErrno} from '../../../errors.js';
import {CacheFormatError, parseCacheBuffer} from './binary.js';
import {parseLdconfigOutput} from './ldconfig-p.js';
import type {LdCache} from './types.js';

export const DEFAULT_LD_CACHE = '/etc/ld.so.cache';
/** Real caches are tens to hundreds of KB; refuse to slurp something absurd. */
const MAX_CACHE_BYTES = 64 * 1024 * 1024;
const LDCONFIG_CANDIDATES = ['ldconfig', '/sbin/ldconfig', '/usr/sbin/ldconfig'];

export interface LoadLdCacheOptions {
  /** The ldconfig to run for the fallback (default: ldconfig on PATH, then /sbin, /usr/sbin). */
  ldconfig?: string;
}

export function loadLdCache(file: string = DEFAULT_LD_CACHE, options: LoadLdCacheOptions = {}): LdCache {
  let problem: string;
  try {
    const st = statSync(file);
    if (!st.isFile()) throw new CacheFormatError('not a regular file');
    if (st.size > MAX_CACHE_BYTES) throw new CacheFormatError(`${st.size} bytes is far larger than any ld.so.cache`);
    return parseCacheBuffer(file, readFileSync(file));
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return {file, format: 'missing', entries: [], generator: null, warnings: []};
    if (!(error instanceof CacheFormatError) && !isErrno(error)) throw error;
    problem = `${file}: ${error instanceof Error ? error.message : String(error)}`;
  }
  const fallback = viaLdconfig(file, options.ldconfig);
  if ('entries' in fallback) {
    return {file, format: 'ldconfig-p', entries: fallback.entries, generator: fallback.generator,
      warnings: [`${problem}; read it through \`ldconfig -p\` instead`]};
  }
  return {file, format: 'missing', entries: [], generator: null,
    warnings: [`${problem}; \`ldconfig -p\` could not read it either (${fallback.error}); treating the cache as empty, as ld.so does`]};
}

function viaLdconfig(file: string, ldconfig?: string): ReturnType<typeof parseLdconfigOutput> | {error: string} {
  // Loaded only here: a readable cache (the normal case) never needs child_process.
  const {execFileSync} = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  let lastError = 'ldconfig not found';
  for (const candidate of ldconfig ? [ldconfig] : LDCONFIG_CANDIDATES) {
    try {
      // The header line is translated; the entry lines are not, but LC_ALL=C keeps everything predictable.
      const stdout = execFileSync(candidate, ['-p', '-C', file], {
        env: {...process.env, LC_ALL: 'C'}, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'],
      });
      return parseLdconfigOutput(stdout);
    } catch (error) {
      if (isErrno(error, 'ENOENT')) continue;
      const stderr = String((error as {stderr?: unknown}).stderr ?? '').trim();
      lastError = stderr || (error instanceof Error ? error.message : String(error));
      break;
    }
  }
  return {error: lastError};
}
