import type {StorePaths} from '../store/paths.js';
import {storePaths} from '../store/paths.js';
import {refreshResolveIndex} from '../store/registry.js';
import {syncSiteMirror, type SiteSync} from '../store/site.js';
import {rehash} from './rehash.js';

/**
 * The user's store with the site stores beneath it (issue 45) brought up to date: the mirror of
 * the sites (src/core/store/site.ts), and where it changed, the resolve/ index, the hook's
 * switch/index and the shims. A user's store that cannot be written (a read-only mount) gives
 * one warning and is used as it is.
 */
export function syncSites(paths: StorePaths, env: NodeJS.ProcessEnv = process.env, force = false): SiteSync {
  let result: SiteSync;
  try {
    result = syncSiteMirror(paths, env, force);
    if (result.changed) {
      refreshResolveIndex(paths);
      rehash(paths);
    }
  } catch (error) {
    return {
      sites: [], source: '', changed: false,
      warnings: [`the site stores' versions could not be brought into your store ${paths.root}: ${(error as Error).message}; your own versions are used alone: make the store writable, or unset CUDAENV_SITE_DIRS`],
    };
  }
  return result;
}

/** storePaths() with the site stores brought up to date, their warnings (one line each) given to `warn`. */
export function layeredStorePaths(warn: (message: string) => void, env: NodeJS.ProcessEnv = process.env): StorePaths {
  const paths = storePaths(env);
  for (const w of syncSites(paths, env).warnings) warn(w);
  return paths;
}
