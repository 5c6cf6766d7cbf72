import {lstatSync, realpathSync, statSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError, UsageError, isErrno} from '../errors.js';
import {quoteSh} from '../text/quote.js';
import {detectToolkitVersion, type DetectionSource} from '../versions/detect.js';
import {describeComponents, describeMismatch, matchRelease, mergeTables, releaseTable, runtimeMinor, tableRange, type FoundComponent, type ReleaseMatch, type ReleaseTable} from '../versions/releases.js';
import {cachedReleaseTable, readCachedReleases} from '../store/release-cache.js';
import {isLabel, parseLabel} from '../versions/version.js';
import type {StorePaths} from '../store/paths.js';
import {afterVersionsChanged} from './on-change.js';
import {describeVersion, ensureStoreDirs, listVersions} from '../store/registry.js';

export interface Registration {
  label: string;
  target: string;
  path: string;
  /** How the version was found; `--as` when the user named it. */
  source: DetectionSource | '--as';
  evidence: string[];
  /** How the component versions matched NVIDIA's releases (source 'components'). */
  release?: ReleaseMatch;
  /** What the user should know about the label: the components match several releases, or none. */
  warning?: string;
  /** Where the matched release's components came from: cudaenv's release table, or a mirror's manifest (kept in the store's cache). */
  releaseFrom?: string;
}

/** What reading a mirror's manifests gave, for a toolkit newer than the release table. */
export interface MirrorLookup {
  /** The mirror, as messages show it. */
  mirror: string;
  /** cudaenv's table with the mirror's releases added (those read now and those cached before). */
  releases: ReleaseTable;
  /** Why the mirror could not be read, if it could not. */
  error?: string;
}

/** Reads the configured mirror's manifests of releases newer than the table (remote/, injected: toolkits/ does not reach the network itself). */
export type LookupReleases = (components: Record<string, FoundComponent>) => Promise<MirrorLookup>;

/** cudaenv's release table with the releases a mirror's manifests added, as the store's cache keeps them. */
export function knownReleases(paths: StorePaths): ReleaseTable {
  return mergeTables(releaseTable(), cachedReleaseTable(paths));
}

/** Where the release a match names comes from, for messages and `releaseFrom`. */
function releaseSource(paths: StorePaths, label: string): string {
  if (label in releaseTable()) return 'cudaenv\'s release table';
  const cached = readCachedReleases(paths)[label];
  return cached ? `the manifest of ${label} from ${cached.mirror} (kept in ${paths.cache}/releases.json)` : 'cudaenv\'s release table';
}

/**
 * The warning for a label matched from components that name no single release, with the
 * command that names the toolkit otherwise. Undefined for an exact match.
 */
export function releaseWarning(dir: string, release: ReleaseMatch | undefined, known: {releases?: ReleaseTable; lookup?: MirrorLookup} = {}): string | undefined {
  if (!release || release.kind === 'exact') return undefined;
  const rename = `name it yourself: cudaenv add ${quoteSh(dir)} --as VERSION`;
  if (release.kind === 'newer') {
    const {oldest, newest} = tableRange();
    const extra = Object.keys(known.releases ?? {}).filter((l) => !(l in releaseTable()));
    const table = `cudaenv's release table (${oldest} to ${newest}${extra.length > 0 ? `, and ${extra.join(', ')} from a mirror's manifests` : ''})`;
    const own = release.components.cuda_cudart?.version === release.label ? 'the runtime\'s own version' : 'nvcc\'s own version';
    const minor = runtimeMinor(release.components);
    const mirror = known.lookup === undefined ? ''
      : known.lookup.error !== undefined ? `, and the mirror ${known.lookup.mirror} could not be read (${known.lookup.error})`
        : `, nor does any manifest the mirror ${known.lookup.mirror} serves${minor ? ` for ${minor}.x` : ''}`;
    const refresh = known.lookup === undefined || known.lookup.error !== undefined
      ? `to name its release, run \`cudaenv add ${quoteSh(dir)}\` where the mirror can be reached (it reads the mirror's redistrib manifests and keeps them in the store's cache), or with --mirror DIR naming a copy of them`
      : 'if NVIDIA has published its release since, a mirror that serves its manifest names it (cudaenv add --mirror URL)';
    return `the components of ${dir} (${describeComponents(release)}) are newer than every release in ${table}${mirror}: taken as ${release.label}, ${own}; ${refresh}; or ${rename}`;
  }
  if (release.kind === 'several') {
    return `the components of ${dir} (${describeComponents(release)}) are in releases ${release.candidates.join(', ')}: taken as the newest, ${release.label}; if it is another, ${rename}`;
  }
  if (release.kind === 'partial') {
    return `the components of ${dir} match no single NVIDIA release (${describeMismatch(release)}): taken as ${release.label}, the release that has most of them; ${rename}`;
  }
  const labels = Object.keys(releaseTable());
  return `no NVIDIA release cudaenv knows (${labels[0]} to ${labels.at(-1)}) has the components of ${dir} (${describeComponents(release)}): taken as ${release.label}, a component's own version; ${rename}`;
}

/**
 * `cudaenv add`: registers an existing toolkit directory as `versions/<label>` -> the directory.
 * A toolkit newer than every release cudaenv knows is named from the mirror's manifests when
 * `lookup` is given (they are kept in the store's cache, so the next time needs no network).
 */
export async function registerToolkit(paths: StorePaths, dir: string, as?: string, options: {lookup?: LookupReleases} = {}): Promise<Registration> {
  let target: string;
  try {
    target = realpathSync(dir);
    if (!statSync(target).isDirectory()) throw new UsageError(`${dir} is not a directory`, 'Give the toolkit directory, for example /usr/local/cuda-12.2.');
  } catch (error) {
    if (error instanceof CudaenvError) throw error;
    if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR')) {
      throw new UsageError(`${dir} does not exist`, 'Give an existing toolkit directory, for example /usr/local/cuda-12.2 (`cudaenv ls --system` lists the ones this machine has).');
    }
    if (isErrno(error, 'EACCES')) throw new UsageError(`${dir} cannot be read: permission denied`, 'Give a toolkit directory you may read.');
    throw new UsageError(`cannot use ${dir}: ${(error as Error).message}`, 'Give an existing toolkit directory, for example /usr/local/cuda-12.2.');
  }
  if (as !== undefined && !isLabel(as)) {
    throw new UsageError(`--as ${JSON.stringify(as)} is not a version label`,
      'Use MAJOR.MINOR.PATCH, for example --as 12.4.1, or a second toolkit of a release as MAJOR.MINOR.PATCH-SUFFIX, the suffix lowercase letters and digits starting with a letter (at most 16), for example --as 12.4.1-local.');
  }
  let known = knownReleases(paths);
  const detection = detectToolkitVersion(target, as === undefined, known);
  let lookup: MirrorLookup | undefined;
  if (as === undefined && detection.release?.kind === 'newer' && options.lookup) {
    lookup = await options.lookup(detection.release.components);
    known = lookup.releases;
    const again = matchRelease(detection.release.components, known);
    if (again?.label) {
      detection.release = again;
      detection.version = again.label;
    }
  }
  if (detection.evidence.length === 0) {
    throw new CudaenvError(`${target} is not a CUDA toolkit: it has no bin/nvcc, no libcudart.so in lib64/ or lib/, no include/cuda_runtime_api.h, no version.json and no dist-info/`, {
      hint: 'Point cudaenv add at the toolkit root, the directory that holds bin/ and lib64/.',
      code: 'not-a-toolkit',
    });
  }
  // Nothing invents a release (issue 44): --as may name what the toolkit's own files cannot tell, never
  // another release than they state (13.0.3 for a toolkit whose components are 13.0.2's would then win
  // `use 13.0`, and doctor would think cudaenv's release table old).
  if (as !== undefined) {
    const probe = detectToolkitVersion(target, true, known);
    const stated = probe.source === 'version.json' || probe.source === 'version.txt' || probe.release?.kind === 'exact' ? probe.version : undefined;
    // 12.4.1-local names a second toolkit of release 12.4.1: its release part is what is compared.
    const asRelease = parseLabel(as)!.release;
    if (stated && stated !== asRelease) {
      const existing = describeVersion(paths, stated);
      throw new UsageError(`--as ${as}: ${target} is CUDA ${stated} (${probe.source === 'components' ? 'its components are that release\'s' : `its ${probe.source} says so`}), not ${as}`, existing
        ? `CUDA ${stated} is already in the store (${existing.kind === 'registered' ? `registered from ${existing.target}` : 'installed by cudaenv'}): use that one, replace it (cudaenv uninstall ${stated} && cudaenv add ${quoteSh(dir)}), or keep both, this one under a label (cudaenv add ${quoteSh(dir)} --as ${stated}-local).`
        : `Register it as what it is: cudaenv add ${quoteSh(dir)}`);
    }
  }
  const label = as ?? detection.version;
  if (!label) {
    throw new CudaenvError(`cannot tell which CUDA version ${target} holds (found ${detection.evidence.join(', ')}, but no version.json, version.txt, working bin/nvcc, versioned libcudart.so or wheel metadata in dist-info/)`, {
      hint: `Name it yourself: cudaenv add ${quoteSh(dir)} --as 12.4.1`,
      code: 'version-unknown',
    });
  }
  if (target.startsWith(paths.versions + '/')) {
    throw new UsageError(`${target} is already inside the cudaenv store`, 'Nothing to register.');
  }
  ensureStoreDirs(paths);
  const link = join(paths.versions, label);
  const result: Registration = {label, target, path: link, source: as ? '--as' : detection.source!, evidence: detection.evidence};
  if (!as && detection.release) {
    result.release = detection.release;
    const warning = releaseWarning(dir, detection.release, {releases: known, lookup});
    if (warning) result.warning = warning;
    if (detection.release.kind === 'exact' || detection.release.kind === 'several') result.releaseFrom = releaseSource(paths, detection.release.label);
  }
  const existing = describeVersion(paths, label);
  if (existing) {
    if (existing.kind === 'registered' && existing.target === target) {
      return result;
    }
    throw new CudaenvError(`CUDA ${label} is already in the store (${existing.kind === 'registered' ? `registered from ${existing.target}` : 'installed by cudaenv'})`, {
      // No invented release (issue 44): a second toolkit of a release gets a suffixed label, which
      // only its exact name selects.
      hint: `Use the one it has, replace it (cudaenv uninstall ${label} && cudaenv add ${quoteSh(dir)}), or keep both, this one under a label that is no release (cudaenv add ${quoteSh(dir)} --as ${duplicateLabel(label)}).`,
      code: 'exists',
    });
  }
  try {
    symlinkSync(target, link);
  } catch (error) {
    if (isErrno(error, 'EEXIST')) throw new CudaenvError(`CUDA ${label} was added to the store by another process just now`, {hint: 'Run `cudaenv ls` to see it.'});
    throw new CudaenvError(`cannot write ${link}: ${(error as Error).message}`, {hint: 'Check the permissions of the cudaenv store (CUDAENV_DIR).'});
  }
  await afterVersionsChanged(paths);
  return result;
}

/**
 * The label the store knows a toolkit directory by (installed there, or registered from it),
 * so that doctor and `ls --system` name a toolkit as `ls` and `current` do, --as included.
 */
export function storeLabelOf(paths: StorePaths, dir: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return undefined;
  }
  for (const v of listVersions(paths)) {
    if (v.broken) continue;
    try {
      if (realpathSync(v.path) === real) return v.label;
    } catch {
      // A version that vanished meanwhile names nothing.
    }
  }
  return undefined;
}

/** Whether a path exists without following links. */
export function lexists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The label the duplicate hint offers: the release with a suffix (12.4.1-local), never another release. */
function duplicateLabel(label: string): string {
  const release = parseLabel(label)?.release ?? label;
  return label === `${release}-local` ? `${release}-local2` : `${release}-local`;
}
