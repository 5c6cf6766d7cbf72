import {lstatSync, mkdtempSync, readdirSync, renameSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError} from '../errors.js';
import {acquireLock, isStale, lockPath, readLockOwner} from '../store/lock.js';
import type {StorePaths} from '../store/paths.js';

/**
 * Names under `tmp/` this module owns:
 *   stage-<label>-<pid>-XXXXXX  a toolkit being assembled
 *   old-<label>-<pid>-XXXXXX    the previous copy during `--force` (renamed aside, then deleted)
 *   rm-<label>-<pid>-XXXXXX     a version being deleted by uninstall
 * Whoever holds the version lock of <label> may clean them: their owners are gone.
 */
const LEFTOVER_RE = /^(stage|old|rm)-(\d+\.\d+\.\d+)-\d+-[A-Za-z0-9]{6}$/;

export function versionLockName(label: string): string {
  return `version-${label}`;
}

export function makeTempIn(paths: StorePaths, kind: 'stage' | 'old' | 'rm', label: string): string {
  return mkdtempSync(join(paths.tmp, `${kind}-${label}-${process.pid}-`));
}

/** A temp name (not created) for renaming something aside. */
export function tempName(paths: StorePaths, kind: 'old' | 'rm', label: string): string {
  const dir = makeTempIn(paths, kind, label);
  rmSync(dir, {recursive: true, force: true});
  return dir;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * With the version lock of `label` held: an `old-` copy whose replacement never arrived
 * (killed between the two renames of --force) is put back; everything else is deleted.
 */
export function recoverLeftovers(paths: StorePaths, label: string): {restored: boolean; removed: number} {
  let names: string[];
  try {
    names = readdirSync(paths.tmp);
  } catch {
    return {restored: false, removed: 0};
  }
  let restored = false;
  let removed = 0;
  const dest = join(paths.versions, label);
  for (const name of names.sort()) {
    const m = LEFTOVER_RE.exec(name);
    if (!m || m[2] !== label) continue;
    const path = join(paths.tmp, name);
    if (m[1] === 'old' && !exists(dest)) {
      renameSync(path, dest);
      restored = true;
      continue;
    }
    rmSync(path, {recursive: true, force: true});
    removed++;
  }
  return {restored, removed};
}

/** Cleans leftovers of other versions whose lock is free (their installs died). */
export async function cleanOtherLeftovers(paths: StorePaths, except: string): Promise<string[]> {
  let names: string[];
  try {
    names = readdirSync(paths.tmp);
  } catch {
    return [];
  }
  const labels = new Set(names.flatMap((n) => {
    const m = LEFTOVER_RE.exec(n);
    return m && m[2] !== except ? [m[2]!] : [];
  }));
  const restored: string[] = [];
  for (const label of labels) {
    let lock;
    try {
      lock = await acquireLock(paths.locks, versionLockName(label), {wait: false, purpose: `cleanup of ${label}`});
    } catch {
      continue; // someone works on it right now
    }
    try {
      if (recoverLeftovers(paths, label).restored) restored.push(label);
    } finally {
      lock.release();
    }
  }
  return restored;
}

/** A directory under `tmp/` that an install, a `--force` or an uninstall left when it was killed (SIGKILL, a crash, a power cut). */
export interface LeftoverStaging {
  path: string;
  /** stage: a toolkit being assembled; old: the previous copy during --force (put back, not deleted); rm: a version being deleted. */
  kind: 'stage' | 'old' | 'rm';
  version: string;
  /** The process that made it, which is gone or no longer works on that version. */
  pid: number;
  bytes: number;
}

function treeBytes(dir: string): number {
  let bytes = 0;
  try {
    for (const e of readdirSync(dir, {withFileTypes: true, recursive: true})) {
      if (!e.isFile()) continue;
      try {
        bytes += lstatSync(join(e.parentPath ?? (e as {path: string}).path, e.name)).size;
      } catch {
        // removed meanwhile
      }
    }
  } catch {
    // removed meanwhile
  }
  return bytes;
}

/**
 * Whether the process named in a leftover's name still works on that version: the directory is
 * made, and removed, while its maker holds the version's lock, so it is live only while that lock
 * names the same pid and is not stale (its owner alive and not a reused pid: store/lock.ts).
 */
function owned(paths: StorePaths, version: string, pid: number): boolean {
  const path = lockPath(paths.locks, versionLockName(version));
  const owner = readLockOwner(path);
  return owner !== undefined && owner.pid === pid && !isStale(path, owner);
}

/**
 * What killed installs left under `tmp/` (gigabytes with real toolkits), only what no live process
 * owns. `cudaenv cache` reports it, `cudaenv cache clean` removes it, the next install of any
 * version does too; doctor may report it (this function reads only).
 */
export function leftoverStaging(paths: StorePaths): LeftoverStaging[] {
  let names: string[];
  try {
    names = readdirSync(paths.tmp);
  } catch {
    return [];
  }
  const found: LeftoverStaging[] = [];
  for (const name of names.sort()) {
    const m = LEFTOVER_RE.exec(name);
    if (!m) continue;
    const pid = Number(/-(\d+)-[A-Za-z0-9]{6}$/.exec(name)![1]);
    if (owned(paths, m[2]!, pid)) continue;
    const path = join(paths.tmp, name);
    found.push({path, kind: m[1] as LeftoverStaging['kind'], version: m[2]!, pid, bytes: treeBytes(path)});
  }
  return found;
}

export interface StagingCleanup {
  removed: LeftoverStaging[];
  /** `old-` copies of a --force killed between its two renames, put back in versions/ (their version was gone). */
  restored: LeftoverStaging[];
  /** Leftovers of a version whose lock a live process holds now: it reclaims them itself. */
  busy: LeftoverStaging[];
}

/**
 * Removes what leftoverStaging finds, each version's under that version's lock taken without
 * waiting (an install that holds it cleans its version's leftovers itself): the same recovery an
 * install runs first, so an `old-` copy whose version is gone is put back, not deleted.
 */
export async function cleanLeftoverStaging(paths: StorePaths): Promise<StagingCleanup> {
  const result: StagingCleanup = {removed: [], restored: [], busy: []};
  const byVersion = new Map<string, LeftoverStaging[]>();
  for (const l of leftoverStaging(paths)) byVersion.set(l.version, [...byVersion.get(l.version) ?? [], l]);
  for (const [version, leftovers] of byVersion) {
    let lock;
    try {
      lock = await acquireLock(paths.locks, versionLockName(version), {wait: false, purpose: `cleanup of ${version}`});
    } catch (error) {
      if (!(error instanceof CudaenvError) || error.code !== 'locked') throw error;
      result.busy.push(...leftovers);
      continue;
    }
    try {
      const dest = join(paths.versions, version);
      const hadVersion = exists(dest);
      recoverLeftovers(paths, version);
      for (const l of leftovers) {
        if (exists(l.path)) result.busy.push(l); // could not be removed: said, not hidden
        else if (l.kind === 'old' && !hadVersion && exists(dest)) result.restored.push(l);
        else result.removed.push(l);
      }
    } finally {
      lock.release();
    }
  }
  return result;
}
