import {createHash} from 'node:crypto';
import {CudaenvError, UsageError} from '../errors.js';
import {fetchIndexText, fetchText} from './fetch-text.js';
import {parseIndexPage} from './index-page.js';
import {labelParts, matchesPrefix, newestMatching} from './labels.js';
import {parseManifest, type Manifest} from './manifest.js';
import {mirrorLocation, type Mirror} from './mirror.js';
import {prefixedVersion} from '../versions/spec.js';

/** Every release label a mirror offers, oldest first. */
export async function listReleases(mirror: Mirror, signal?: AbortSignal): Promise<string[]> {
  return parseIndexPage(await fetchIndexText(mirror, signal));
}

export function manifestName(label: string): string {
  return `redistrib_${label}.json`;
}

export async function loadManifest(mirror: Mirror, label: string, optional = false, signal?: AbortSignal): Promise<Manifest | undefined> {
  const text = await fetchText(mirror, manifestName(label), {optional, signal});
  return text === undefined ? undefined : manifestFromText(mirror, label, text);
}

/** Parses the text of `redistrib_<label>.json` from a mirror and checks it describes that release. */
export function manifestFromText(mirror: Mirror, label: string, text: string): Manifest {
  const name = manifestName(label);
  const manifest = parseManifest(text, mirrorLocation(mirror, name), label);
  if (manifest.label !== label) {
    throw new CudaenvError(`${mirrorLocation(mirror, name)} describes release ${manifest.label}, not ${label}`, {
      hint: 'The mirror is inconsistent; use another mirror.', code: 'bad-manifest',
    });
  }
  // JSON is UTF-8 (RFC 8259), so these are the bytes the mirror sent for any manifest that parsed.
  manifest.sha256 = createHash('sha256').update(text, 'utf8').digest('hex');
  return manifest;
}

/** Checks a remote spec: `12`, `12.4`, `12.4.1` or `latest` (aliases and `system` name nothing on a mirror). */
export function checkRemoteSpec(text: string, what = 'the version'): string {
  if (text === 'latest' || labelParts(text)) return text;
  const bare = prefixedVersion(text);
  throw new UsageError(`${what} ${JSON.stringify(text)} is not a release spec`,
    bare === undefined ? 'Use a version such as 12, 12.4 or 12.4.1, or latest.' : `Write the version without its prefix: ${bare}`);
}

/**
 * The newest release matching a spec and its manifest. A full label is fetched directly,
 * so a mirror without an index page still serves exact versions.
 */
export async function resolveRelease(mirror: Mirror, spec: string, signal?: AbortSignal): Promise<Manifest> {
  checkRemoteSpec(spec);
  if (/^\d+\.\d+\.\d+$/.test(spec)) {
    const direct = await loadManifest(mirror, spec, true, signal);
    if (direct) return direct;
  }
  const labels = await listReleases(mirror, signal);
  const label = newestMatching(labels, spec);
  if (!label) {
    const near = labels.filter((l) => spec !== 'latest' && matchesPrefix(l, spec.split('.')[0]!)).slice(-5);
    throw new CudaenvError(`the mirror ${mirror.display} offers no CUDA release matching ${spec}`, {
      hint: labels.length === 0 ? 'Its index lists no redistrib_*.json at all: check --mirror.'
        : `${near.length > 0 ? `Releases of CUDA ${spec.split('.')[0]}: ${near.join(', ')}. ` : ''}See all with \`cudaenv ls-remote\`.`,
      code: 'not-found',
    });
  }
  return (await loadManifest(mirror, label, false, signal))!;
}
