import {createHash} from 'node:crypto';
import {readFileSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {writeFileSafely} from '../safe-fs/index.js';
import {loadManifest, manifestFromText, manifestName} from './catalog.js';
import {fetchText} from './fetch-text.js';
import {artifactFor, type Manifest} from './manifest.js';
import type {Mirror} from './mirror.js';
import {platformForRelease, type MachineKind, type Platform} from './platform.js';

export interface Installability {
  installable: boolean;
  /** The platform it would be installed for. */
  platform?: string;
  /** Why it cannot be installed. */
  why?: string;
}

/** What a toolkit needs at least: without nvcc and cudart there is no toolkit to install. */
const CORE = ['cuda_nvcc', 'cuda_cudart'];

/** Whether a release can be installed for this machine (or `--arch`), and if not, why. */
export function installability(manifest: Manifest, options: {explicit?: Platform; kind?: MachineKind} = {}): Installability {
  let platform: string;
  try {
    platform = platformForRelease(manifest, options).platform;
  } catch (error) {
    return {installable: false, why: (error as Error).message.replace(/^CUDA \S+ has/, 'it has')};
  }
  const lacking = CORE.filter((name) => {
    const c = manifest.components.get(name);
    return !c || !artifactFor(c, platform);
  });
  if (lacking.length === CORE.length) return {installable: false, platform, why: `it has no ${platform} archives of ${CORE.join(' or ')}`};
  if (lacking.length > 0) return {installable: false, platform, why: `it has no ${platform} archive of ${lacking.join(', ')}`};
  return {installable: true, platform};
}

/** How long ls-remote trusts a manifest it read before: which platforms a release has does not change. */
const MANIFEST_MAX_AGE_MS = 24 * 3600 * 1000;

/**
 * A release's manifest for ls-remote: from `cache/manifests/<mirror>/` when read from this http(s)
 * mirror within a day, else fetched and kept there, so listing NVIDIA's forty releases costs
 * forty requests once a day, not every time. Installs always fetch the manifest afresh.
 */
async function cachedManifest(mirror: Mirror, label: string, cacheDir: string | undefined, signal?: AbortSignal): Promise<Manifest | undefined> {
  if (mirror.kind !== 'http' || cacheDir === undefined) return loadManifest(mirror, label, true, signal);
  const file = join(cacheDir, 'manifests', createHash('sha256').update(mirror.base).digest('hex').slice(0, 16), manifestName(label));
  try {
    if (Date.now() - statSync(file).mtimeMs < MANIFEST_MAX_AGE_MS) return manifestFromText(mirror, label, readFileSync(file, 'utf8'));
  } catch {
    // absent, unreadable or broken: fetch it
  }
  const text = await fetchText(mirror, manifestName(label), {optional: true, signal});
  if (text === undefined) return undefined;
  const manifest = manifestFromText(mirror, label, text);
  try {
    writeFileSafely(file, text);
  } catch {
    // a cache that cannot be written only costs a download next time
  }
  return manifest;
}

/**
 * Checks each release's manifest, a few at once (NVIDIA's index lists about forty). A manifest
 * that cannot be read or parsed makes its release uninstallable, with the reason, instead of
 * failing the whole listing.
 */
export async function checkReleases(mirror: Mirror, labels: string[], options: {explicit?: Platform; kind?: MachineKind; signal?: AbortSignal; concurrency?: number; cacheDir?: string} = {}): Promise<Map<string, Installability>> {
  const result = new Map<string, Installability>();
  const queue = [...labels];
  const worker = async (): Promise<void> => {
    for (let label = queue.shift(); label !== undefined; label = queue.shift()) {
      try {
        const manifest = await cachedManifest(mirror, label, options.cacheDir, options.signal);
        result.set(label, manifest ? installability(manifest, options) : {installable: false, why: `the mirror lists redistrib_${label}.json but does not serve it`});
      } catch (error) {
        if (options.signal?.aborted) throw error;
        result.set(label, {installable: false, why: (error as Error).message});
      }
    }
  };
  await Promise.all(Array.from({length: Math.min(options.concurrency ?? 6, labels.length)}, worker));
  return result;
}
