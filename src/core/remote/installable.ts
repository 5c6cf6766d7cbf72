import {createHash} from 'node:crypto';
import {readFileSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {writeFileSafely} from '../safe-fs/index.js';
import {loadManifest, manifestFromText, manifestName} from './catalog.js';
import {fetchText} from './fetch-text.js';
import {CudaenvError} from '../errors.js';
import type {Manifest} from './manifest.js';
import type {Mirror} from './mirror.js';
import {platformForRelease, type MachineKind, type Platform} from './platform.js';
import {planComponents, type MissingPart, type Profile} from './profiles.js';

export interface Installability {
  installable: boolean;
  /** The platform it would be installed for. */
  platform?: string;
  /** Why it cannot be installed. */
  why?: string;
  /** Parts of the profile the release has no archive of for the platform (ids: cudart, cccl...). */
  missing?: string[];
}

export interface InstallabilityOptions {
  explicit?: Platform;
  kind?: MachineKind;
  /** The profile asked for (install's and ls-remote's default: devel). */
  profile?: Profile;
  /** --allow-missing-parts: a release lacking parts of the profile is installed without them. */
  allowMissingParts?: boolean;
}

/** The flag that lets an install go on without parts of its profile. */
export const ALLOW_MISSING_FLAG = '--allow-missing-parts';

/**
 * The one rule `install` and `ls-remote` share: a release lacking a part of the asked profile
 * for the platform is not installed unless --allow-missing-parts says so. It was two rules:
 * ls-remote refused a release without cuda_cudart while install installed it, exit 0, without
 * the CUDA runtime. The error for an install, undefined when nothing is missing or it is allowed.
 */
export function missingPartsRefusal(label: string, platform: string, plan: {missing: readonly MissingPart[]; unknown?: readonly string[]}, allowMissingParts = false): CudaenvError | undefined {
  const {missing} = plan;
  if (missing.length === 0 || allowMissingParts) return undefined;
  const unknown = plan.unknown && plan.unknown.length > 0
    ? ` CUDA ${label} has components cudaenv does not know (${plan.unknown.join(', ')}): if one of them is the part under a new name, add it with --components NAME.`
    : '';
  return new CudaenvError(`CUDA ${label} has no archive for ${platform} of ${describeParts(missing)}: nothing was installed`, {
    hint: `Install it without ${missing.length === 1 ? 'that part' : 'those parts'} with ${ALLOW_MISSING_FLAG} (code that needs ${missing.length === 1 ? 'it' : 'them'} will not build), ` +
      `or choose another release (\`cudaenv ls-remote\`), --profile or --arch.${unknown}`,
    code: 'missing-parts',
  });
}

function describeParts(missing: readonly MissingPart[]): string {
  return missing.map((m) => `${m.what} (looked for as ${m.names.join(' or ')})`).join('; ');
}

/** Whether a release can be installed for this machine (or `--arch`) with this profile, and if not, why. */
export function installability(manifest: Manifest, options: InstallabilityOptions = {}): Installability {
  let platform: string;
  try {
    platform = platformForRelease(manifest, options).platform;
  } catch (error) {
    return {installable: false, why: (error as Error).message.replace(/^CUDA \S+ has/, 'it has')};
  }
  let missing: MissingPart[];
  try {
    missing = planComponents({manifest, platform, profile: options.profile ?? 'devel'}).missing;
  } catch (error) {
    return {installable: false, platform, why: (error as Error).message.replace(/^CUDA \S+ has/, 'it has')};
  }
  if (missing.length === 0) return {installable: true, platform};
  const ids = missing.map((m) => m.part);
  if (options.allowMissingParts) return {installable: true, platform, missing: ids};
  const names = missing.map((m) => m.names.join(' or ')).join(', ');
  return {installable: false, platform, missing: ids, why: `it has no ${platform} archive of ${names}, which the ${options.profile ?? 'devel'} profile takes; ${ALLOW_MISSING_FLAG} installs it without`};
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
export async function checkReleases(mirror: Mirror, labels: string[], options: InstallabilityOptions & {signal?: AbortSignal; concurrency?: number; cacheDir?: string} = {}): Promise<Map<string, Installability>> {
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
