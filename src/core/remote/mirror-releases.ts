import {formatError} from '../errors.js';
import {cacheReleases} from '../store/release-cache.js';
import type {StorePaths} from '../store/paths.js';
import {knownReleases, registerToolkit, type MirrorLookup, type Registration} from '../toolkits/register.js';
import {mergeTables, newerThanTable, runtimeMinor, type FoundComponent, type ReleaseTable} from '../versions/releases.js';
import {isVersion} from '../versions/version.js';
import {listReleases, loadManifest} from './catalog.js';
import {mirrorsFor} from './choose.js';
import {matchesPrefix} from './labels.js';
import type {Manifest} from './manifest.js';
import type {Mirror} from './mirror.js';
import {machineSoftwareReason} from './profiles.js';

/**
 * Names toolkits newer than cudaenv's release table from the manifests the configured mirror
 * serves: the releases of the toolkit's MAJOR.MINOR (13.4.x for an nvcc 13.4.91) that neither
 * the table nor the store's cache has are read, their components kept in `cache/releases.json`,
 * and used from there afterwards, offline. Manifests are data: only keys and version strings are kept.
 */

/** A release's toolkit components and their versions (machine software left out, as in releases.json). */
export function manifestRow(manifest: Manifest): Record<string, string> {
  const row: Record<string, string> = {};
  for (const [key, c] of [...manifest.components.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    if (machineSoftwareReason(key) === undefined && c.version !== '') row[key] = c.version;
  }
  return row;
}

/** Reads the mirror's manifests a toolkit's components may belong to; never throws (a failure is `error`). */
export async function releasesFromMirror(paths: StorePaths, mirror: Mirror, components: Record<string, FoundComponent>, signal?: AbortSignal): Promise<MirrorLookup> {
  const known = knownReleases(paths);
  let labels: string[];
  try {
    labels = await listReleases(mirror, signal);
  } catch (error) {
    return {mirror: mirror.display, releases: known, error: formatError(error).split('\n')[0]!};
  }
  const minor = runtimeMinor(components);
  const wanted = labels.filter((l) => isVersion(l) && !(l in known) && (minor !== undefined ? matchesPrefix(l, minor) : newerThanTable(l)));
  const rows: ReleaseTable = {};
  let error: string | undefined;
  for (let i = 0; i < wanted.length; i += 6) {
    await Promise.all(wanted.slice(i, i + 6).map(async (label) => {
      try {
        rows[label] = manifestRow((await loadManifest(mirror, label, false, signal))!);
      } catch (e) {
        error ??= formatError(e).split('\n')[0]!;
      }
    }));
  }
  if (Object.keys(rows).length > 0) cacheReleases(paths, rows, mirror.display);
  return {mirror: mirror.display, releases: mergeTables(known, rows), ...(error !== undefined ? {error} : {})};
}

/**
 * `cudaenv add` with the configured mirror (or `--mirror`, checked before anything is read) to
 * name a toolkit newer than the release table. A mirror setting that cannot be used is said in
 * the warning, never a reason not to register.
 */
export async function registerWithMirror(paths: StorePaths, dir: string, options: {as?: string; mirror?: string} = {}): Promise<Registration> {
  const given = options.mirror === undefined ? undefined : (await mirrorsFor(paths, options.mirror)).cuda;
  return registerToolkit(paths, dir, options.as, {
    lookup: async (components) => {
      let mirror = given;
      try {
        mirror ??= (await mirrorsFor(paths, undefined)).cuda;
      } catch (error) {
        return {mirror: 'the configured mirror', releases: knownReleases(paths), error: formatError(error).split('\n')[0]!};
      }
      return releasesFromMirror(paths, mirror, components);
    },
  });
}
