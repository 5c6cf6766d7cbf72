import {createHash} from 'node:crypto';
import {chownSync, existsSync, linkSync, statSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError, isErrno} from '../errors.js';
import {atomicWriteFile} from '../store/atomic-write.js';
import type {StorePaths} from '../store/paths.js';

/** An alternatives group as it was before cudaenv selected its own entry. */
export interface GroupBefore {
  name: string;
  status: 'auto' | 'manual';
  value: string | null;
}

/** What the target was before the first `cudaenv link`: what `unlink` restores. */
export type Previous =
  | {kind: 'absent'}
  | {kind: 'symlink'; value: string}
  | {kind: 'alternatives'; groups: GroupBefore[]};

export interface LinkRecord {
  target: string;
  previous: Previous;
  recordedAt: string;
}

/** A group cudaenv selected an alternative in; `added` when cudaenv also registered it (and `unlink` removes it). */
export interface TouchedAlternative {
  group: string;
  path: string;
  added: boolean;
}

/**
 * Records are keyed by what they describe: a target path, or an alternatives group
 * (`groupSubject`), since one link can also move the `cuda-<major>` group and a later link of
 * another major moves a different one.
 */
export function groupSubject(altdir: string, name: string): string {
  return `alternatives:${altdir}/${name}`;
}

function key(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

export function linksDir(paths: StorePaths): string {
  return join(paths.root, 'links');
}

function recordFile(paths: StorePaths, target: string): string {
  return join(linksDir(paths), `${key(target)}.json`);
}

function addedDir(paths: StorePaths, target: string): string {
  return join(linksDir(paths), `${key(target)}.added`);
}

export function readRecord(paths: StorePaths, target: string): LinkRecord | undefined {
  const file = recordFile(paths, target);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw new CudaenvError(`cannot read ${file}: ${(error as Error).message}`, {hint: 'Check the permissions of the cudaenv store.'});
  }
  try {
    const record = JSON.parse(text) as LinkRecord;
    if (record.target !== target || typeof record.previous?.kind !== 'string') throw new Error('unexpected content');
    return record;
  } catch (error) {
    throw new CudaenvError(`the link record ${file} for ${target} is damaged (${(error as Error).message})`, {
      hint: `Restore ${target} by hand (ln -sfn DIR ${target}) and remove ${file}.`,
    });
  }
}

/**
 * Records what the target was, unless a record exists already: the first `link` keeps the
 * original, later ones (and concurrent ones) leave it alone. The file is complete before it
 * appears (written aside, then hard-linked into place, which fails if one exists), and it is
 * written before the target changes, so any process that sees a cudaenv link also sees the record.
 */
export function recordPrevious(paths: StorePaths, target: string, previous: Previous): LinkRecord {
  const file = recordFile(paths, target);
  const record: LinkRecord = {target, previous, recordedAt: new Date().toISOString()};
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    mkdirSync(linksDir(paths), {recursive: true});
    writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`);
  } catch (error) {
    // Nothing has changed yet: without the record, unlink could not restore the target.
    throw new CudaenvError(`cannot record what ${target} was before linking, in ${linksDir(paths)}: ${(error as Error).message}`, {
      hint: 'cudaenv keeps it in the store so that `cudaenv unlink` can restore it: run as a user who can write the store (CUDAENV_DIR), or make it writable.',
      code: 'store-not-writable',
    });
  }
  try {
    linkSync(tmp, file);
    adoptStoreOwner(paths, [linksDir(paths), file]);
    return record;
  } catch (error) {
    if (isErrno(error, 'EEXIST')) return readRecord(paths, target)!;
    throw error;
  } finally {
    rmSync(tmp, {force: true});
  }
}

export function forgetRecord(paths: StorePaths, target: string): void {
  rmSync(addedDir(paths, target), {recursive: true, force: true});
  rmSync(recordFile(paths, target), {force: true});
}

/** One file per added alternative, so concurrent `link` calls never rewrite a shared list. */
export function noteTouchedAlternative(paths: StorePaths, target: string, touched: TouchedAlternative): void {
  const file = join(addedDir(paths, target), `${key(`${touched.group}\0${touched.path}`)}.json`);
  // A later link of a path cudaenv added earlier finds it known: keep the note saying "added".
  if (!touched.added && existsSync(file)) return;
  atomicWriteFile(file, `${JSON.stringify(touched)}\n`);
  adoptStoreOwner(paths, [linksDir(paths), addedDir(paths, target), file]);
}

/**
 * Under sudo the files land in the invoking user's store: give them the store's owner, so
 * that the user's own cudaenv can still read and replace them.
 */
export function adoptStoreOwner(paths: StorePaths, files: string[]): void {
  if (process.getuid?.() !== 0) return;
  let owner;
  try {
    owner = statSync(paths.root);
  } catch {
    return;
  }
  if (owner.uid === 0) return;
  for (const f of files) {
    try {
      chownSync(f, owner.uid, owner.gid);
    } catch {
      // best effort: a file that vanished meanwhile needs no owner
    }
  }
}

export function touchedAlternatives(paths: StorePaths, target: string): TouchedAlternative[] {
  let names: string[];
  try {
    names = readdirSync(addedDir(paths, target));
  } catch {
    return [];
  }
  return names.filter((n) => n.endsWith('.json')).flatMap((n) => {
    try {
      return [JSON.parse(readFileSync(join(addedDir(paths, target), n), 'utf8')) as TouchedAlternative];
    } catch {
      return [];
    }
  });
}
