import {createHash} from 'node:crypto';
import {CudaenvError, UsageError} from '../errors.js';
import {fetchIndexText, fetchText} from './fetch-text.js';
import {parseIndexPage} from './index-page.js';
import {compareLabels, labelParts, matchesPrefix, newestMatching} from './labels.js';
import {parseManifest, type Manifest} from './manifest.js';
import {mirrorLocation, type Mirror} from './mirror.js';
import {prefixedVersion} from '../versions/spec.js';
import {parseLabel} from '../versions/version.js';

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
  const label = parseLabel(text);
  throw new UsageError(`${what} ${JSON.stringify(text)} is not a release spec`,
    bare !== undefined ? `Write the version without its prefix: ${bare}`
      : label?.suffix !== undefined ? `${text} is a label \`cudaenv add DIR --as ${text}\` gives a toolkit you have, never one to install: install its release (cudaenv install ${label.release}), or register the toolkit.`
        : 'Use a version such as 12, 12.4 or 12.4.1, or latest.');
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
    throw new CudaenvError(`the mirror ${mirror.display} offers no CUDA release matching ${spec}`, {
      hint: labels.length === 0 ? 'Its index lists no redistrib_*.json at all: check --mirror.'
        : `${[nearReleases(labels, spec), 'See all with `cudaenv ls-remote`.'].filter(Boolean).join(' ')}`,
      code: 'not-found',
    });
  }
  return (await loadManifest(mirror, label, false, signal))!;
}

/**
 * What a spec no release matches was likely meant as: the releases of its MAJOR.MINOR (12.4.99:
 * the 12.4 releases; it listed the newest of 12, 12.6.3 to 12.9.1), else the releases nearest to it
 * (two below, two above: 12.5 where the mirror has no 12.5). A sentence, or '' for nothing.
 */
export function nearReleases(labels: readonly string[], spec: string): string {
  const sorted = [...labels].sort(compareLabels);
  const parts = spec.split('.');
  if (parts.length > 2) {
    const prefix = parts.slice(0, 2).join('.');
    const same = sorted.filter((l) => matchesPrefix(l, prefix));
    if (same.length > 0) return `Releases of CUDA ${prefix}: ${same.slice(-8).join(', ')}.`;
  }
  if (spec === 'latest') return '';
  const at = sorted.findIndex((l) => compareLabels(l, spec) > 0);
  const i = at === -1 ? sorted.length : at;
  const near = sorted.slice(Math.max(0, i - 2), i + 2);
  return near.length > 0 ? `The nearest releases: ${near.join(', ')}.` : '';
}
