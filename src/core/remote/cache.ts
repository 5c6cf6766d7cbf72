import {readdirSync, rmSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError} from '../errors.js';
import {acquireLock, readLockOwner, lockPath} from '../store/lock.js';
import type {StorePaths} from '../store/paths.js';
import {cleanLeftoverStaging, leftoverStaging, type LeftoverStaging, type StagingCleanup} from './staging.js';

/**
 * The download cache (`cache/`): verified archives, kept so that a reinstall or another
 * version sharing an archive (cuDNN) fetches nothing; `.part` files of downloads that were
 * interrupted, resumed by the next install of their archive; `manifests/`, ls-remote's copies.
 * CUDA archives are gigabytes: `cudaenv cache clean` frees them, never under a running install.
 */
export interface CacheFile {
  file: string;
  bytes: number;
  kind: 'archive' | 'partial';
}

export interface CacheState {
  dir: string;
  files: CacheFile[];
  manifests: {files: number; bytes: number};
  /** `cache/check/`: `cudaenv check`'s stored results (src/core/elf/cache/verdict-cache.ts). */
  checks: {files: number; bytes: number};
  /** `cache/node/`: the compiled code kept for cudaenv's own start (bin/run.cjs: the bundle's, and on Node.js >= 22.1 Node's own). */
  compiled: {files: number; bytes: number};
  /** The cache's bytes (archives, parts, manifests, check results, compiled code); `staging` is counted apart. */
  bytes: number;
  /** Staging directories under tmp/ that killed installs left and no live process owns (remote/staging.ts). */
  staging: LeftoverStaging[];
}

const CACHE_NAME = /^([0-9a-f]{16})-[A-Za-z0-9._+-]+$/;

/** The lock an install holds on one archive while it downloads or reads it: keyed like the cache file. */
export function archiveLockName(sha256: string): string {
  return `archive-${sha256.slice(0, 16)}`;
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function treeSize(dir: string): {files: number; bytes: number} {
  let files = 0;
  let bytes = 0;
  let entries;
  try {
    entries = readdirSync(dir, {withFileTypes: true, recursive: true});
  } catch {
    return {files, bytes};
  }
  for (const e of entries) {
    if (!e.isFile()) continue;
    files++;
    bytes += sizeOf(join(e.parentPath ?? (e as {path: string}).path, e.name));
  }
  return {files, bytes};
}

export function describeCache(paths: StorePaths): CacheState {
  let names: string[] = [];
  try {
    names = readdirSync(paths.cache);
  } catch {
    // no cache yet
  }
  const files: CacheFile[] = [];
  for (const name of names.sort()) {
    const path = join(paths.cache, name);
    const partial = name.endsWith('.part');
    if (!CACHE_NAME.test(partial ? name.slice(0, -5) : name)) continue;
    files.push({file: name, bytes: sizeOf(path), kind: partial ? 'partial' : 'archive'});
  }
  const manifests = treeSize(join(paths.cache, 'manifests'));
  const checks = treeSize(paths.checkCache);
  const compiled = treeSize(join(paths.cache, 'node'));
  return {dir: paths.cache, files, manifests, checks, compiled, bytes: files.reduce((s, f) => s + f.bytes, 0) + manifests.bytes + checks.bytes + compiled.bytes, staging: leftoverStaging(paths)};
}

export interface CleanResult {
  removed: CacheFile[];
  /** Files an install is using now, left alone. */
  busy: Array<CacheFile & {by: string}>;
  manifestsRemoved: number;
  checksRemoved: number;
  /** What killed installs left under tmp/: removed with or without --partial (nothing in it is ever reused). */
  staging: StagingCleanup;
  freedBytes: number;
}

/**
 * Removes cached archives and `.part` files (only `.part` files with `partialOnly`), and the
 * manifest copies and stored check results; with or without `partialOnly`, the staging
 * directories killed installs left under tmp/ (see cleanLeftoverStaging). Each archive is removed under its own lock, taken without waiting: one an
 * install holds is reported busy and kept, and no install can start on it while it goes.
 */
export async function cleanCache(paths: StorePaths, options: {partialOnly?: boolean} = {}): Promise<CleanResult> {
  const state = describeCache(paths);
  const result: CleanResult = {removed: [], busy: [], manifestsRemoved: 0, checksRemoved: 0, staging: {removed: [], restored: [], busy: []}, freedBytes: 0};
  result.staging = await cleanLeftoverStaging(paths);
  result.freedBytes += result.staging.removed.reduce((s, l) => s + l.bytes, 0);
  for (const f of state.files) {
    if (options.partialOnly && f.kind !== 'partial') continue;
    const name = archiveLockName(CACHE_NAME.exec(f.kind === 'partial' ? f.file.slice(0, -5) : f.file)![1]!);
    let lock;
    try {
      lock = await acquireLock(paths.locks, name, {wait: false, purpose: `cleaning the cache of ${f.file}`});
    } catch (error) {
      if (!(error instanceof CudaenvError) || error.code !== 'locked') throw error;
      const owner = readLockOwner(lockPath(paths.locks, name));
      result.busy.push({...f, by: owner ? `${owner.purpose} (process ${owner.pid} on ${owner.hostname})` : 'another process'});
      continue;
    }
    try {
      rmSync(join(paths.cache, f.file), {force: true});
      result.removed.push(f);
      result.freedBytes += f.bytes;
    } finally {
      lock.release();
    }
  }
  if (!options.partialOnly) {
    result.manifestsRemoved = state.manifests.files;
    result.freedBytes += state.manifests.bytes;
    rmSync(join(paths.cache, 'manifests'), {recursive: true, force: true});
    // Stored check results are only ever a shortcut: a check without them reads everything again.
    result.checksRemoved = state.checks.files;
    result.freedBytes += state.checks.bytes;
    rmSync(paths.checkCache, {recursive: true, force: true});
    // Node.js compiles cudaenv again at the next start, and keeps it again.
    result.freedBytes += state.compiled.bytes;
    rmSync(join(paths.cache, 'node'), {recursive: true, force: true});
  }
  return result;
}
