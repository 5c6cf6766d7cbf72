import {readFileSync} from 'node:fs';
import {join} from 'node:path';
import {isVersion} from '../versions/version.js';
import type {ReleaseTable} from '../versions/releases.js';
import {writeFileSafely} from '../safe-fs/index.js';
import type {StorePaths} from './paths.js';

/**
 * Releases newer than cudaenv's release table, as the configured mirror's manifests describe
 * them: `cache/releases.json`, written when `cudaenv add` (or `ls-remote`) reads them, and read
 * by every later naming of a toolkit (add, doctor) without the network. `cudaenv cache clean`
 * leaves it: it is a few KB, and without it a toolkit newer than the table loses its name offline.
 */
export interface CachedRelease {
  components: Record<string, string>;
  /** The mirror it was read from, as messages show it (no password). */
  mirror: string;
  fetched_at: string;
}

const FILE = 'releases.json';

export function releaseCachePath(paths: StorePaths): string {
  return join(paths.cache, FILE);
}

/** The cached releases; a missing or damaged file is an empty cache (it is only ever refetched). */
export function readCachedReleases(paths: StorePaths): Record<string, CachedRelease> {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(releaseCachePath(paths), 'utf8'));
  } catch {
    return {};
  }
  const releases = (data as {releases?: unknown})?.releases;
  if (typeof releases !== 'object' || releases === null) return {};
  const out: Record<string, CachedRelease> = {};
  for (const [label, entry] of Object.entries(releases as Record<string, unknown>)) {
    const e = entry as Partial<CachedRelease> | null;
    if (!isVersion(label) || typeof e !== 'object' || e === null || typeof e.components !== 'object' || e.components === null) continue;
    const components = Object.fromEntries(Object.entries(e.components).filter(([k, v]) => /^[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}$/.test(k) && typeof v === 'string' && v.length < 40));
    out[label] = {components, mirror: typeof e.mirror === 'string' ? e.mirror : '?', fetched_at: typeof e.fetched_at === 'string' ? e.fetched_at : '?'};
  }
  return out;
}

/** The cached releases as a release table (for matchRelease). */
export function cachedReleaseTable(paths: StorePaths): ReleaseTable {
  return Object.fromEntries(Object.entries(readCachedReleases(paths)).map(([label, r]) => [label, r.components]));
}

/** Adds (or replaces) releases read from a mirror. */
export function cacheReleases(paths: StorePaths, rows: ReleaseTable, mirror: string, now = new Date()): void {
  const releases = readCachedReleases(paths);
  for (const [label, components] of Object.entries(rows)) releases[label] = {components, mirror, fetched_at: now.toISOString()};
  writeFileSafely(releaseCachePath(paths), `${JSON.stringify({format: 1, releases}, null, 2)}\n`, {mode: 0o644, durable: false});
}
