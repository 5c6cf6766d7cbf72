import {lstatSync, mkdtempSync, readdirSync, renameSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import {acquireLock} from '../store/lock.js';
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
