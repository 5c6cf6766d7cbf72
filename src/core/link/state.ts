import {createHash} from 'node:crypto';
import {readdirSync} from 'node:fs';
import {join, resolve} from 'node:path';
import {CudaenvError, isErrno} from '../errors.js';
import {readFileSafely, removeSafely, runningAsRoot, writeFileSafely} from '../safe-fs/index.js';
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
 * Where root keeps what `link` must undo: a directory of root's, never the invoking user's store,
 * which the user can write (a link planted there made root give away /etc). CUDAENV_STATE_DIR
 * moves it (tests; sites with another layout); sudo's env_reset drops it, and it must pass the same
 * root-owned walk as the default, so a user cannot point root at a directory of theirs.
 */
export const ROOT_STATE_DIR = '/var/lib/cudaenv';

export function rootStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.CUDAENV_STATE_DIR ? resolve(env.CUDAENV_STATE_DIR) : ROOT_STATE_DIR;
}

/** Where this process keeps link records: root's state directory as root, else the store's `links/`. */
export function linksDir(paths: StorePaths, env: NodeJS.ProcessEnv = process.env): string {
  return runningAsRoot() ? join(rootStateDir(env), 'links') : join(paths.root, 'links');
}

/** Every directory a record of a link may be in, for readers that only warn (uninstall). */
export function allLinksDirs(paths: StorePaths, env: NodeJS.ProcessEnv = process.env): string[] {
  return [join(paths.root, 'links'), join(rootStateDir(env), 'links')];
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

function recordFile(paths: StorePaths, target: string, env: NodeJS.ProcessEnv): string {
  return join(linksDir(paths, env), `${key(target)}.json`);
}

function addedDir(paths: StorePaths, target: string, env: NodeJS.ProcessEnv): string {
  return join(linksDir(paths, env), `${key(target)}.added`);
}

/** A record is a few hundred bytes; anything larger was not written by cudaenv. */
const MAX_RECORD = 64 * 1024;

/** Parses a record without echoing its bytes: as root it may be anything a user planted before. */
function parseRecord(file: string, text: string, target: string): LinkRecord {
  let record: LinkRecord;
  try {
    record = JSON.parse(text) as LinkRecord;
  } catch {
    record = undefined as unknown as LinkRecord;
  }
  const p = record?.previous;
  const valid = record?.target === target && p !== null && typeof p === 'object' && (
    p.kind === 'absent' ||
    (p.kind === 'symlink' && typeof p.value === 'string') ||
    (p.kind === 'alternatives' && Array.isArray(p.groups) && p.groups.every((g) => typeof g?.name === 'string' && (g.status === 'auto' || g.status === 'manual') && (g.value === null || typeof g.value === 'string'))));
  if (!valid) {
    throw new CudaenvError(`the link record ${file} for ${target} is damaged (not a record cudaenv wrote)`, {
      hint: `Restore ${target} by hand (ln -sfn DIR ${target}) and remove ${file}.`,
    });
  }
  return record;
}

export function readRecord(paths: StorePaths, target: string, env: NodeJS.ProcessEnv = process.env): LinkRecord | undefined {
  const file = recordFile(paths, target, env);
  let text: string;
  try {
    text = readFileSafely(file, MAX_RECORD).toString('utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    if (error instanceof CudaenvError) throw error;
    throw new CudaenvError(`cannot read the link record ${file}: ${(error as Error).message}`, {
      hint: isErrno(error, 'ELOOP') ? `${file} is a symbolic link, which cudaenv never writes: remove it.` : `Check the permissions of ${linksDir(paths, env)}.`,
    });
  }
  return parseRecord(file, text, target);
}

/**
 * Records what the target was, unless a record exists already: the first `link` keeps the
 * original, later ones (and concurrent ones) leave it alone. The file is complete before it
 * appears (written under a random name, then hard-linked into place, which fails if one exists),
 * and it is written before the target changes, so any process that sees a cudaenv link also sees the record.
 */
export function recordPrevious(paths: StorePaths, target: string, previous: Previous, env: NodeJS.ProcessEnv = process.env): LinkRecord {
  const file = recordFile(paths, target, env);
  const record: LinkRecord = {target, previous, recordedAt: new Date().toISOString()};
  let created: boolean;
  try {
    created = writeFileSafely(file, `${JSON.stringify(record, null, 2)}\n`, {exclusive: true, dirMode: 0o755});
  } catch (error) {
    if (error instanceof CudaenvError) throw error;
    // Nothing has changed yet: without the record, unlink could not restore the target.
    throw new CudaenvError(`cannot record what ${target} was before linking, in ${linksDir(paths, env)}: ${(error as Error).message}`, {
      hint: runningAsRoot()
        ? `cudaenv keeps root's records in ${linksDir(paths, env)} so that \`cudaenv unlink\` can restore the target: make it a directory of root's (mkdir -p ${linksDir(paths, env)}).`
        : 'cudaenv keeps it in the store so that `cudaenv unlink` can restore it: run as a user who can write the store (CUDAENV_DIR), or make it writable.',
      code: 'store-not-writable',
    });
  }
  return created ? record : readRecord(paths, target, env)!;
}

export function forgetRecord(paths: StorePaths, target: string, env: NodeJS.ProcessEnv = process.env): void {
  removeSafely(addedDir(paths, target, env), {recursive: true});
  removeSafely(recordFile(paths, target, env));
}

/** One file per added alternative, so concurrent `link` calls never rewrite a shared list. */
export function noteTouchedAlternative(paths: StorePaths, target: string, touched: TouchedAlternative, env: NodeJS.ProcessEnv = process.env): void {
  const file = join(addedDir(paths, target, env), `${key(`${touched.group}\0${touched.path}`)}.json`);
  const text = `${JSON.stringify(touched)}\n`;
  // A later link of a path cudaenv added earlier finds it known: keep the note saying "added".
  if (!touched.added) writeFileSafely(file, text, {exclusive: true});
  else writeFileSafely(file, text);
}

export function touchedAlternatives(paths: StorePaths, target: string, env: NodeJS.ProcessEnv = process.env): TouchedAlternative[] {
  let names: string[];
  try {
    names = readdirSync(addedDir(paths, target, env));
  } catch {
    return [];
  }
  return names.filter((n) => n.endsWith('.json')).flatMap((n) => {
    try {
      const t = JSON.parse(readFileSafely(join(addedDir(paths, target, env), n), MAX_RECORD).toString('utf8')) as TouchedAlternative;
      return typeof t?.group === 'string' && typeof t.path === 'string' && typeof t.added === 'boolean' ? [t] : [];
    } catch {
      return [];
    }
  });
}
