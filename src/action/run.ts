import {existsSync, mkdirSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import * as core from '@actions/core';
import {checkLibraries, firstProblemLine} from '../core/elf/index.js';
import {CudaenvError, formatError} from '../core/errors.js';
import {resolveRelease} from '../core/remote/catalog.js';
import {chooseCudnn} from '../core/remote/cudnn.js';
import {cudnnNeeds, installRelease, type InstallEvent} from '../core/remote/install.js';
import {artifactFor, type Artifact} from '../core/remote/manifest.js';
import type {Platform} from '../core/remote/platform.js';
import {selectComponents} from '../core/remote/profiles.js';
import {pathsFor, type StorePaths} from '../core/store/paths.js';
import {toolkitEnvironment, toolkitLibDir} from '../core/shell/toolkit-env.js';
import {needsRehash, writeSwitchIndex} from '../core/shell/switch-index.js';
import {refreshResolveIndex} from '../core/store/registry.js';
import {cacheServiceFor, ReportedCacheFailure, type CacheService} from './cache-service.js';
import {readInputs, type ActionInputs} from './inputs.js';
import {ARCHIVES_DIR, checksumDigest, keyPrefix, mirrorIdentity, planArchives, planDifference, readPlan, writePlan} from './plan.js';
import {runnerPlatform} from './runner-platform.js';
import {findInToolCache, manifestComponentName, type Request} from './selection.js';
import {formatBytes} from '../core/text/bytes.js';
import {escapeControl} from '../core/text/control.js';
import {writeSummary, type SummaryRow} from './summary.js';

export interface ActionResult {
  version: string;
  cudaPath: string;
  /** tool-cache: already on this runner; cache: archives from the Actions cache; mirror: downloaded. */
  source: 'tool-cache' | 'cache' | 'mirror';
  bytesDownloaded: number;
  checkLine?: string;
  checkOk: boolean;
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (!value) {
    throw new CudaenvError(`${name} is not set: this program runs as a GitHub Actions step`, {
      hint: `Use it as \`uses: <owner>/cudaenv@v1\` in a workflow, or set ${name} (and GITHUB_ENV, GITHUB_PATH, GITHUB_OUTPUT) as the runner does.`, code: 'not-a-runner',
    });
  }
  return value;
}

async function group<T>(title: string, fn: () => Promise<T>): Promise<T> {
  core.startGroup(title);
  try {
    return await fn();
  } finally {
    core.endGroup();
  }
}

/** Says once per run that the cache cannot be used, however many times it fails (`quiet`: the library said it). */
function cacheNotices(): (why: string, quiet?: boolean) => void {
  let said = false;
  return (why, quiet = false) => {
    if (said) return;
    said = true;
    if (!quiet) core.warning(`${why}; going on without it (archives are downloaded from the mirror)`);
  };
}

/**
 * The action: find the toolkit in the runner's tool cache, else install it through the same
 * core as `cudaenv install` (archives from the Actions cache when it has them), then export
 * the environment the way later steps read it and check that the libraries resolve.
 */
export async function runAction(env: NodeJS.ProcessEnv, signal: AbortSignal): Promise<ActionResult> {
  const platform = runnerPlatform();
  const toolCache = required(env, 'RUNNER_TOOL_CACHE');
  const temp = required(env, 'RUNNER_TEMP');
  const inputs = readInputs(env, env.GITHUB_WORKSPACE || process.cwd());
  const work = join(temp, 'cudaenv-cache');
  // The store lives in the tool cache (kept on self-hosted runners); its archives go to a
  // directory of this run that is exactly what the Actions cache saves and restores.
  const paths: StorePaths = {...pathsFor(join(toolCache, 'cudaenv')), cache: join(work, ARCHIVES_DIR)};
  const request: Request = {spec: inputs.spec, profile: inputs.profile, components: inputs.components, cudnn: inputs.cudnn};

  const found = findInToolCache(paths, platform, request);
  let result: Omit<ActionResult, 'checkLine' | 'checkOk'>;
  let rows: SummaryRow[];
  const notes: string[] = [];
  if (found) {
    core.info(`CUDA ${found.label} is in the tool cache (${found.dir}) with what this step asks for: nothing to download.`);
    rows = found.receipt.components.map((c) => ({name: c.name, version: c.version, size: c.size, from: 'tool cache'}));
    if (found.receipt.cudnn) rows.push({name: 'cudnn', version: found.receipt.cudnn.version, size: found.receipt.cudnn.size, from: 'tool cache'});
    result = {version: found.label, cudaPath: found.dir, source: 'tool-cache', bytesDownloaded: 0};
  } else {
    try {
      ({result, rows} = await install(paths, platform, inputs, request, work, notes, cacheServiceFor(env), signal));
    } finally {
      rmSync(work, {recursive: true, force: true}); // archives: in the cache now, or not wanted
    }
  }

  const dir = result.cudaPath;
  // As `cudaenv use` builds it: lib64 first, and another toolkit of this store (an earlier step's) dropped.
  const ld = inputs.ldLibraryPath === 'prepend' ? toolkitEnvironment(env, dir, paths.versions, 'prepend').LD_LIBRARY_PATH : env.LD_LIBRARY_PATH;
  core.addPath(join(dir, 'bin'));
  core.exportVariable('CUDA_HOME', dir);
  core.exportVariable('CUDA_PATH', dir);
  // The tool cache's store is a site store of the job's later steps (issue 45, docs/site-stores.md): a
  // `cudaenv` they run uses this toolkit beneath its own store, without a copy. A store an older
  // release left without the hook's index gets one, whose generation tells a later step's mirror
  // what this step added.
  if (needsRehash(paths)) {
    refreshResolveIndex(paths);
    writeSwitchIndex(paths);
  }
  core.exportVariable('CUDAENV_SITE_DIRS', withSiteStore(env.CUDAENV_SITE_DIRS, paths.root));
  if (inputs.ldLibraryPath === 'prepend') core.exportVariable('LD_LIBRARY_PATH', ld ?? '');
  core.setOutput('version', result.version);
  core.setOutput('cuda-path', dir);
  core.setOutput('cache-hit', String(result.source !== 'mirror'));

  let checkLine: string | undefined;
  let checkOk = true;
  if (inputs.check) {
    const report = await group(`Check that CUDA ${result.version}'s libraries resolve`, async () => {
      const r = await checkLibraries({targets: [toolkitLibDir(dir)], ldLibraryPath: ld || undefined, storeVersionsDir: paths.versions});
      return r;
    });
    checkOk = report.ok;
    checkLine = `cudaenv check: CUDA ${result.version}: ${firstProblemLine(report)}`;
    if (report.ok) core.info(checkLine);
    else core.error(checkLine, {title: 'cudaenv check'});
  }
  await writeSummary({...result, rows, notes, checkLine, checkOk});
  return {...result, checkLine, checkOk};
}

/** CUDAENV_SITE_DIRS with `store` in it (first, where it was not there already): a site's own list is kept after it. */
export function withSiteStore(current: string | undefined, store: string): string {
  const dirs = (current ?? '').split(':').filter((d) => d !== '');
  return dirs.includes(store) ? dirs.join(':') : [store, ...dirs].join(':');
}

async function install(
  paths: StorePaths, platform: Platform, inputs: ActionInputs, request: Request, work: string,
  notes: string[], service: CacheService, signal: AbortSignal,
): Promise<{result: Omit<ActionResult, 'checkLine' | 'checkOk'>; rows: SummaryRow[]}> {
  const {mirror, cudnnMirror} = inputs;
  const noCache = cacheNotices();
  let cacheUsable = inputs.cache;
  if (inputs.cache) {
    const why = await service.unavailable();
    if (why) {
      noCache(why);
      notes.push(`Cache: ${why}.`);
      cacheUsable = false;
    }
  }
  // The manifests are fetched by every run, also one that restores an entry: the key holds their
  // checksums, and a restored entry is checked against them (never trusted for what it says).
  const {manifest, cudnnChoice} = await group(`Resolve CUDA ${inputs.spec}${inputs.cudnn ? ` and cuDNN ${inputs.cudnn}` : ''}`, async () => {
    const resolved = await resolveRelease(mirror, inputs.spec, signal);
    const choice = inputs.cudnn === undefined ? undefined
      : await chooseCudnn(cudnnMirror, inputs.cudnn, Number(resolved.label.split('.')[0]), platform, signal);
    core.info(`CUDA ${inputs.spec} (${inputs.specSource}) is ${resolved.label}${choice ? `; cuDNN ${inputs.cudnn} is ${choice.label}` : ''}`);
    return {manifest: resolved, cudnnChoice: choice};
  });
  const label = manifest.label;
  const components = request.components?.map((n) => manifestComponentName(manifest, n));
  const names = selectComponents({manifest, platform, profile: request.profile, components});
  // What cuDNN loads from the toolkit is installed with it (as `cudaenv install --cudnn` does), so
  // the cache key covers those archives too.
  if (cudnnChoice) names.push(...cudnnNeeds(manifest, platform, names).added);
  const archives: Array<{name: string; artifact: Artifact}> = names.map((name) => ({name, artifact: artifactFor(manifest.components.get(name)!, platform)!}));
  if (cudnnChoice) archives.push({name: 'cudnn', artifact: cudnnChoice.artifact});
  const mirrorId = mirrorIdentity(mirror);
  const cudnnMirrorId = cudnnChoice ? mirrorIdentity(cudnnMirror) : null;
  const prefix = keyPrefix({
    platform, label, cudnnLabel: cudnnChoice?.label, mirror: mirrorId, cudnnMirror: cudnnMirrorId,
    request: {profile: request.profile ?? null, components: request.components ?? null, cudnn: request.cudnn ?? null},
  });
  const key = `${prefix}${checksumDigest([manifest.sha256, cudnnChoice?.manifest.sha256], archives)}`;
  const wanted = planArchives(archives);

  rmSync(work, {recursive: true, force: true});
  mkdirSync(work, {recursive: true});
  let restoredKey: string | undefined;
  if (cacheUsable) {
    await group(`Restore archives from ${service.name}`, async () => {
      try {
        restoredKey = await service.restore(work, key, [prefix]);
      } catch (error) {
        // The service failed: no save either (it would fail again, and say so again).
        noCache(`${service.name} failed to restore (${formatError(error)})`, error instanceof ReportedCacheFailure);
        notes.push(`Cache: ${service.name} failed (${formatError(error)}); nothing was restored or saved.`);
        cacheUsable = false;
        restoredKey = undefined;
      }
      if (restoredKey === undefined) {
        core.info(`no entry for ${prefix}*`);
        return;
      }
      const restored = readPlan(work);
      const why = !restored ? 'it holds no plan of its archives'
        : restored.platform !== platform ? `it is for ${restored.platform}`
          : restored.mirror !== mirrorId || restored.cudnnMirror !== cudnnMirrorId ? `it was saved from the mirror ${escapeControl(restored.mirror)}${restored.cudnnMirror ? ` and ${escapeControl(String(restored.cudnnMirror))}` : ''}`
            : planDifference(restored, wanted);
      if (why === undefined) {
        core.info(`restored ${restoredKey}`);
        return;
      }
      // Another mirror's build, or a manifest that changed since: what this run's manifest gives is installed instead.
      core.warning(`the cache entry ${restoredKey} does not match the manifest of CUDA ${label} fetched from ${mirror.display} for this run: ${why}. It is discarded and CUDA ${label} is installed from the mirror.`);
      notes.push(`Cache: the entry ${restoredKey} did not match this run's manifest (${why}); it was discarded.`);
      if (restoredKey === key) cacheUsable = false; // entries are immutable: this key cannot be saved again
      restoredKey = undefined;
      rmSync(work, {recursive: true, force: true});
      mkdirSync(work, {recursive: true});
    });
  }

  const sizes = new Map(archives.map((a) => [a.name, a.artifact.size]));
  const installed = await group(`Install CUDA ${label}: ${archives.map((a) => a.name).join(', ')}`, () => installRelease({
    paths, spec: label, mirror, cudnnMirror, platform, profile: request.profile, components,
    cudnn: cudnnChoice ? inputs.cudnn : undefined, manifest, cudnnChoice,
    // Not covering the request (findInToolCache said so): replace it with what is asked for.
    force: existsSync(join(paths.versions, label)),
    // The Action warns of a part the release lacks (below) instead of failing the job, as before
    // the CLI's install began to refuse such a release without --allow-missing-parts (issue 44 item 5).
    allowMissingParts: true,
    signal,
    onEvent: (e: InstallEvent) => {
      if (e.type === 'progress' && e.progress.stage === 'done') {
        core.info(`${e.component}: ${formatBytes(e.progress.total)} ${e.progress.fromCache ? 'from the cache' : 'downloaded'}, verified and extracted`);
      } else if (e.type === 'waiting') {
        core.info(`waiting for another install of CUDA ${label} on this runner${e.owner ? ` (pid ${e.owner.pid})` : ''}`);
      }
    },
  }));
  // A part the profile expects that the release lacks (or has under a name cudaenv does not know) is said, not dropped.
  for (const w of installed.warnings) core.warning(w);
  for (const n of installed.notes) core.info(n);
  const fresh = installed.components.filter((c) => !c.from_cache);
  const bytesDownloaded = fresh.reduce((n, c) => n + (sizes.get(c.name) ?? 0), 0);
  const rows: SummaryRow[] = installed.components.map((c) => ({
    name: c.name, version: c.version, size: sizes.get(c.name) ?? 0, from: c.from_cache ? service.name.replace(/^the /, '') : 'mirror',
  }));
  if (cacheUsable && restoredKey === undefined) {
    await group(`Save archives to ${service.name}`, async () => {
      writePlan(work, {format: 2, key, platform, mirror: mirrorId, cudnnMirror: cudnnMirrorId, archives: wanted});
      try {
        if (await service.save(work, key)) core.info(`saved ${key}`);
        else core.info(`${key} was not saved (the reason is above); the next run downloads again`);
      } catch (error) {
        noCache(`${service.name} failed to save (${formatError(error)})`);
        notes.push(`Cache: save failed (${formatError(error)}).`);
      }
    });
  }
  return {
    result: {version: installed.version, cudaPath: installed.path, source: fresh.length === 0 ? 'cache' : 'mirror', bytesDownloaded},
    rows,
  };
}
