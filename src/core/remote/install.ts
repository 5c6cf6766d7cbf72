import {cpus} from 'node:os';
import {existsSync, mkdirSync, readFileSync, renameSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError} from '../errors.js';
import {onFatalExit} from '../fatal-cleanup.js';
import {writeFileSafely} from '../safe-fs/index.js';
import {acquireLock, reclaimStaleLocks, type LockOwner} from '../store/lock.js';
import {afterVersionsChanged} from '../toolkits/on-change.js';
import type {StorePaths} from '../store/paths.js';
import {describeVersion, ensureStoreDirs, RECEIPT_FILE} from '../store/registry.js';
import {isVersion} from '../versions/version.js';
import {fetchAndExtract, type ArchiveProgress} from './archive.js';
import {resolveRelease} from './catalog.js';
import {checkpoint} from './checkpoint.js';
import {chooseCudnn, type CudnnChoice} from './cudnn.js';
import {artifactFor, type Artifact, type Manifest} from './manifest.js';
import {linkLib, mergeComponent} from './merge.js';
import type {Mirror} from './mirror.js';
import {relocatePkgConfig} from './pkgconfig.js';
import {platformForRelease, type MachineKind, type Platform} from './platform.js';
import {describeMissing, describeUnknown, planComponents, type MissingPart, type Profile} from './profiles.js';
import {missingPartsRefusal} from './installable.js';
import {cleanOtherLeftovers, makeTempIn, recoverLeftovers, tempName, versionLockName} from './staging.js';

export interface InstallRequest {
  paths: StorePaths;
  spec: string;
  mirror: Mirror;
  /** The platform asked for (--arch); without it, the one right for this machine and the release. */
  platform?: Platform;
  /** The machine's kind (tests); detected when absent. */
  machine?: MachineKind;
  profile?: Profile;
  components?: string[];
  /** Lets --components name driver and machine software (nvidia_driver, fabricmanager...). */
  allowDriverComponents?: boolean;
  /** --allow-missing-parts: install a release that lacks parts of the profile, without them (refused otherwise). */
  allowMissingParts?: boolean;
  cudnn?: string;
  cudnnMirror?: Mirror;
  force?: boolean;
  /** The release already resolved (the GitHub Action keeps it with its cached archives): `spec` is not looked up on the mirror. */
  manifest?: Manifest;
  /** The cuDNN build already chosen (same reason): `cudnn` is not looked up on the cuDNN mirror. */
  cudnnChoice?: CudnnChoice;
  /** Archives fetched and extracted at once (default: min(4, 2 x cores)). */
  concurrency?: number;
  signal?: AbortSignal;
  onEvent?: (event: InstallEvent) => void;
}

export interface PlannedComponent {
  name: string;
  version: string;
  size: number;
}

export type InstallEvent =
  | {type: 'plan'; label: string; platform: string; platformWhy: string; components: PlannedComponent[]}
  | {type: 'waiting'; owner: LockOwner | undefined}
  | {type: 'progress'; component: string; progress: ArchiveProgress}
  | {type: 'finishing'};

export interface ReceiptComponent {
  name: string;
  version: string;
  sha256: string;
  size: number;
  relative_path: string;
}

export interface Receipt {
  release: string;
  release_date: string | null;
  platform: string;
  profile: string | null;
  mirror: string;
  installed_at: string;
  components: ReceiptComponent[];
  /** What was really installed: `variant` is the CUDA major the archive is built for. */
  cudnn: (ReceiptComponent & {release: string; variant: string; style: string; mirror: string}) | null;
}

export interface InstallResult {
  version: string;
  path: string;
  status: 'installed' | 'reinstalled' | 'already-installed';
  components: Array<{name: string; version: string; from_cache: boolean}>;
  cudnn: string | null;
  mirror: string;
  platform: string;
  /** Why that platform ("this machine is x86_64", "chosen with --arch"...). */
  platform_why: string;
  /** What cudaenv did beyond what was asked, and why (components cuDNN needs). */
  notes: string[];
  /** Things the user asked for that did not happen (e.g. --cudnn on an existing installation, a part the release lacks). */
  warnings: string[];
  /** Parts the profile expects that the release has no archive of for the platform (installed without them). */
  missing_parts: MissingPart[];
  /** Toolkit components of the release cudaenv does not know (newer than its tables), which the profile left out. */
  unknown_components: string[];
}

interface Job {
  name: string;
  version: string;
  artifact: Artifact;
  mirror: Mirror;
}

/**
 * `cudaenv install`: resolve the release on the mirror, then - holding the version's lock -
 * fetch and extract every archive into `tmp/stage-*` (several at once), merge them into one
 * prefix, write the receipt, and move it into `versions/<label>` with one rename. Until that
 * rename nothing is listed; a stage left by a killed run is removed by the next one.
 */
export async function installRelease(req: InstallRequest): Promise<InstallResult> {
  const {paths, mirror} = req;
  const signal = req.signal ?? new AbortController().signal;
  const manifest = req.manifest ?? await resolveRelease(mirror, req.spec, signal);
  const label = manifest.label;
  if (!isVersion(label)) {
    throw new CudaenvError(`the mirror's release ${label} is not a CUDA version label (MAJOR.MINOR.PATCH)`, {code: 'bad-manifest'});
  }
  const {platform, why: platformWhy} = platformForRelease(manifest, {explicit: req.platform, kind: req.machine});
  const plan = planComponents({manifest, platform, profile: req.profile, components: req.components, allowDriverComponents: req.allowDriverComponents});
  const names = plan.names;
  const notes: string[] = [...plan.notes];
  const warnings: string[] = [];
  // Nothing a profile expects is dropped in silence (a renamed or new component, a release that lacks one).
  if (plan.missing.length > 0) warnings.push(describeMissing(label, platform, plan));
  if (plan.unknown.length > 0) notes.push(describeUnknown(label, req.profile ?? 'devel', plan.unknown));
  const jobs: Job[] = names.map((name) => {
    const c = manifest.components.get(name)!;
    return {name, version: c.version, artifact: artifactFor(c, platform)!, mirror};
  });
  let cudnn: CudnnChoice | undefined;
  if (req.cudnn !== undefined) {
    if (!req.cudnnMirror) throw new CudaenvError('--cudnn needs a cuDNN mirror');
    cudnn = req.cudnnChoice ?? await chooseCudnn(req.cudnnMirror, req.cudnn, Number(label.split('.')[0]), platform, signal);
    const {added, missing} = cudnnNeeds(manifest, platform, names);
    for (const name of added) {
      const c = manifest.components.get(name)!;
      jobs.push({name, version: c.version, artifact: artifactFor(c, platform)!, mirror});
    }
    if (added.length > 0) notes.push(`added ${added.join(', ')}: cuDNN ${cudnn.version} loads ${CUDNN_NEEDS.filter((n) => added.includes(n.component)).map((n) => n.library).join(' and ')}`);
    if (missing.length > 0) warnings.push(`cuDNN ${cudnn.version} loads ${missing.join(' and ')}, which CUDA ${label} has no archive of for ${platform}: cuDNN will not work until it is found elsewhere (LD_LIBRARY_PATH)`);
    jobs.push({name: 'cudnn', version: cudnn.version, artifact: cudnn.artifact, mirror: req.cudnnMirror});
  }

  ensureStoreDirs(paths);
  const lock = await acquireLock(paths.locks, versionLockName(label), {
    purpose: `install of CUDA ${label}`,
    onWait: (owner) => req.onEvent?.({type: 'waiting', owner}),
    signal,
  });
  let stage: string | undefined;
  // An unexpected error that kills the process removes the stage (its archives are kept in the cache).
  const forgetStage = onFatalExit(() => {
    if (stage) rmSync(stage, {recursive: true, force: true});
  });
  try {
    // What a killed or crashed run left: its stage (this version's and others'), its locks.
    recoverLeftovers(paths, label);
    await cleanOtherLeftovers(paths, label);
    reclaimStaleLocks(paths.locks);
    const dest = join(paths.versions, label);
    const existing = describeVersion(paths, label);
    const base = {version: label, path: dest, mirror: mirror.display, platform, platform_why: platformWhy, notes, cudnn: cudnn ? cudnn.version : null, warnings, missing_parts: plan.missing, unknown_components: plan.unknown};
    // A registration whose directory is gone serves nothing: an install replaces it without --force.
    if (existing && !existing.broken && !req.force) {
      const had = readReceipt(dest)?.cudnn?.version ?? null;
      // Asked for a cuDNN the installed copy lacks: nothing of what was asked happened, so it is an error, with the command that does it.
      if (cudnn && had !== cudnn.version) {
        const flags = [req.profile ? `--profile ${req.profile}` : '', req.components ? `--components ${req.components.join(',')}` : '', req.allowMissingParts ? '--allow-missing-parts' : ''].filter(Boolean).join(' ');
        throw new CudaenvError(`cuDNN ${cudnn.version} was not added: CUDA ${label} is already installed in ${dest}${had ? ` with cuDNN ${had}` : ' without cuDNN'}, and an install does not change an installed toolkit`, {
          hint: `Reinstall it with cuDNN ${cudnn.version}: cudaenv install ${label} --cudnn ${req.cudnn}${flags ? ` ${flags}` : ''} --force (the CUDA archives come from the cache; the installed copy stays usable until the new one is in place).`,
          code: 'cudnn-not-added',
        });
      }
      return {...base, notes: [], status: 'already-installed', components: [], cudnn: had, warnings: [], missing_parts: [], unknown_components: []};
    }
    // Not without parts of the profile unless asked (ls-remote marks such a release by the same rule).
    const refusal = missingPartsRefusal(label, platform, plan, req.allowMissingParts);
    if (refusal) throw refusal;
    // Only now "Installing CUDA ...": not before a refusal or an "already installed".
    req.onEvent?.({type: 'plan', label, platform, platformWhy, components: jobs.map((j) => ({name: j.name, version: j.version, size: j.artifact.size}))});
    stage = makeTempIn(paths, 'stage', label);
    const partsDir = join(stage, 'parts');
    const root = join(stage, 'root');
    mkdirSync(partsDir);
    const fromCache = await runJobs(jobs, req, partsDir, signal);
    await checkpoint('before-merge');
    for (const job of jobs) {
      req.onEvent?.({type: 'progress', component: job.name, progress: {stage: 'merge', bytes: job.artifact.size, total: job.artifact.size, fromCache: fromCache.get(job.name)!}});
      mergeComponent(join(partsDir, job.name), root, job.name);
    }
    mkdirSync(root, {recursive: true});
    linkLib(root);
    relocatePkgConfig(root, dest);
    writeVersionJson(root, label, jobs);
    const receipt: Receipt = {
      release: label,
      release_date: manifest.date ?? null,
      platform,
      profile: req.components && !req.profile ? null : (req.profile ?? 'devel'),
      mirror: mirror.display,
      installed_at: new Date().toISOString(),
      components: jobs.filter((j) => j.name !== 'cudnn' || !cudnn).map(receiptEntry),
      cudnn: cudnn ? {...receiptEntry(jobs.at(-1)!), release: cudnn.label, variant: cudnn.variant, style: cudnn.style, mirror: req.cudnnMirror!.display} : null,
    };
    writeFileSafely(join(root, RECEIPT_FILE), `${JSON.stringify(receipt, null, 2)}\n`);
    for (const job of jobs) req.onEvent?.({type: 'progress', component: job.name, progress: {stage: 'done', bytes: job.artifact.size, total: job.artifact.size, fromCache: fromCache.get(job.name)!}});
    req.onEvent?.({type: 'finishing'});
    await checkpoint('before-rename');
    if (signal.aborted) throw signal.reason;
    await swapIn(paths, label, root, existing !== undefined);
    rmSync(stage, {recursive: true, force: true});
    stage = undefined;
    await afterVersionsChanged(paths);
    return {
      ...base,
      status: existing && !existing.broken ? 'reinstalled' : 'installed',
      components: jobs.map((j) => ({name: j.name, version: j.version, from_cache: fromCache.get(j.name)!})),
    };
  } finally {
    if (stage) rmSync(stage, {recursive: true, force: true});
    forgetStage();
    lock.release();
  }
}

/** What cuDNN (8 and 9) loads from the toolkit: libcublasLt (NEEDED), libnvrtc (dlopened by its runtime-fusion engines). */
const CUDNN_NEEDS = [
  {component: 'libcublas', library: 'libcublasLt'},
  {component: 'cuda_nvrtc', library: 'libnvrtc'},
];

/** The components cuDNN needs that are not chosen: those the release has (added) and those it lacks. */
export function cudnnNeeds(manifest: Manifest, platform: string, chosen: string[]): {added: string[]; missing: string[]} {
  const added: string[] = [];
  const missing: string[] = [];
  for (const need of CUDNN_NEEDS) {
    if (chosen.includes(need.component)) continue;
    const c = manifest.components.get(need.component);
    if (c && artifactFor(c, platform)) added.push(need.component);
    else missing.push(need.library);
  }
  return {added, missing};
}

function readReceipt(dir: string): Receipt | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, RECEIPT_FILE), 'utf8')) as Receipt;
  } catch {
    return undefined; // a registered toolkit has none
  }
}

function receiptEntry(job: Job): ReceiptComponent {
  return {name: job.name, version: job.version, sha256: job.artifact.sha256, size: job.artifact.size, relative_path: job.artifact.relativePath};
}

/** NVIDIA's own toolkits carry version.json; tools (and `cudaenv add`) read the release from it. */
function writeVersionJson(root: string, label: string, jobs: Job[]): void {
  const path = join(root, 'version.json');
  if (existsSync(path)) return;
  const data: Record<string, {name: string; version: string}> = {cuda: {name: 'CUDA SDK', version: label}};
  for (const j of jobs) data[j.name] = {name: j.name, version: j.version};
  writeFileSafely(path, `${JSON.stringify(data, null, 2)}\n`);
}

/**
 * The one moment the store changes. With --force the old copy is renamed aside first and
 * deleted only after the new one is in place; a crash between the two renames leaves it in
 * tmp/ as `old-*`, which the next run for this version puts back.
 */
async function swapIn(paths: StorePaths, label: string, root: string, replacing: boolean): Promise<void> {
  const dest = join(paths.versions, label);
  if (!replacing) {
    renameSync(root, dest);
    return;
  }
  const aside = tempName(paths, 'old', label);
  renameSync(dest, aside);
  await checkpoint('between-renames');
  try {
    renameSync(root, dest);
  } catch (error) {
    renameSync(aside, dest);
    throw error;
  }
  rmSync(aside, {recursive: true, force: true});
}

/** Runs the archive jobs with bounded concurrency; the first failure stops the rest. */
async function runJobs(jobs: Job[], req: InstallRequest, partsDir: string, outer: AbortSignal): Promise<Map<string, boolean>> {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(outer.reason);
  outer.addEventListener('abort', onAbort, {once: true});
  const limit = Math.max(1, req.concurrency ?? Math.min(4, 2 * cpus().length));
  const fromCache = new Map<string, boolean>();
  const queue = [...jobs];
  let firstError: unknown;
  const worker = async (): Promise<void> => {
    for (;;) {
      const job = queue.shift();
      if (!job || firstError !== undefined) return;
      try {
        const r = await fetchAndExtract({
          component: job.name, mirror: job.mirror, artifact: job.artifact,
          cacheDir: req.paths.cache, locksDir: req.paths.locks, destDir: join(partsDir, job.name),
          signal: controller.signal,
          onProgress: (progress) => req.onEvent?.({type: 'progress', component: job.name, progress}),
        });
        fromCache.set(job.name, r.fromCache);
      } catch (error) {
        req.onEvent?.({type: 'progress', component: job.name, progress: {stage: 'failed', bytes: 0, total: job.artifact.size, fromCache: false}});
        if (firstError === undefined) {
          firstError = error;
          controller.abort(error);
        }
        return;
      }
    }
  };
  try {
    for (const job of jobs) req.onEvent?.({type: 'progress', component: job.name, progress: {stage: 'queued', bytes: 0, total: job.artifact.size, fromCache: false}});
    await Promise.all(Array.from({length: Math.min(limit, jobs.length)}, worker));
  } finally {
    outer.removeEventListener('abort', onAbort);
  }
  if (firstError !== undefined) throw outer.aborted ? outer.reason : firstError;
  return fromCache;
}

