import {closeSync, constants, fchmodSync, fchownSync, fsyncSync, linkSync, openSync, renameSync, rmSync, symlinkSync, unlinkSync, writeSync} from 'node:fs';
import {basename, dirname} from 'node:path';
import {isErrno} from '../errors.js';
import {named, withDir, type SafeDir} from './dir.js';

/** A name no other process can guess (never a pid or a time), beside `name`. */
export function temporaryName(name: string): string {
  // node:crypto on first use: the shell's fast paths load this module and most of them write nothing.
  const {randomBytes} = process.getBuiltinModule('node:crypto') as typeof import('node:crypto');
  return `.${name}.${randomBytes(8).toString('hex')}.tmp`;
}

const CREATE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

export interface WriteOptions {
  /** The file's mode (default 0644). */
  mode?: number;
  /** fsync before it appears (default true; false for caches a power cut only makes recompute). */
  durable?: boolean;
  /** Only if nothing is there yet: the file appears complete or not at all (link(2), which fails on EEXIST). */
  exclusive?: boolean;
  /** Give the new file to this owner, through its descriptor. */
  owner?: {uid: number; gid: number};
  /** The mode missing directories above it are made with (default 0755). */
  dirMode?: number;
}

/**
 * Writes one file so that a reader sees the old content or the new one, never a part, and so that
 * nobody can redirect the write: the content goes into a new file of a random name created with
 * O_EXCL|O_NOFOLLOW in the directory held open (dir.ts), which then replaces the name by rename(2)
 * (or is hard-linked to it with `exclusive`); a link planted at either name is never followed.
 * Returns false only for `exclusive` when the file existed already.
 */
export function writeFileSafely(path: string, content: string | Uint8Array, options: WriteOptions = {}): boolean {
  return withDir(dirname(path), {create: options.dirMode ?? 0o755, purpose: `write ${path}`}, (dir) => writeIn(dir, basename(path), content, options));
}

export function writeIn(dir: SafeDir, name: string, content: string | Uint8Array, options: WriteOptions = {}): boolean {
  try {
    return writeEntry(dir, name, content, options);
  } catch (error) {
    throw named(error, dir, name);
  }
}

function writeEntry(dir: SafeDir, name: string, content: string | Uint8Array, options: WriteOptions): boolean {
  const mode = options.mode ?? 0o644;
  const tmp = temporaryName(name);
  const fd = openSync(dir.entry(tmp), CREATE, mode);
  let placed = false;
  try {
    try {
      writeSync(fd, typeof content === 'string' ? Buffer.from(content) : content);
      // The umask may have taken bits the caller asked for (a shim's 0755).
      fchmodSync(fd, mode);
      if (options.owner) fchownSync(fd, options.owner.uid, options.owner.gid);
      if (options.durable !== false) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    if (options.exclusive) {
      try {
        linkSync(dir.entry(tmp), dir.entry(name));
      } catch (error) {
        if (isErrno(error, 'EEXIST')) return false;
        throw error;
      }
      return true;
    }
    renameSync(dir.entry(tmp), dir.entry(name));
    placed = true;
    return true;
  } finally {
    if (!placed) rmSync(dir.entry(tmp), {force: true});
  }
}

/**
 * Points the link at `path` to `value`, atomically: a new link of a random name is renamed over
 * it, so readers find the old link or the new one. Replaces a link or a file, never a directory.
 */
export function symlinkSafely(path: string, value: string, options: {dirMode?: number} = {}): void {
  withDir(dirname(path), {create: options.dirMode ?? 0o755, purpose: `write ${path}`}, (dir) => symlinkIn(dir, basename(path), value));
}

export function symlinkIn(dir: SafeDir, name: string, value: string): void {
  const tmp = temporaryName(name);
  try {
    symlinkSync(value, dir.entry(tmp));
  } catch (error) {
    throw named(error, dir, name);
  }
  try {
    renameSync(dir.entry(tmp), dir.entry(name));
  } catch (error) {
    rmSync(dir.entry(tmp), {force: true});
    throw named(error, dir, name);
  }
}

/** Removes the entry at `path` (a file or a link, not what a link names); a missing one is fine. */
export function removeSafely(path: string, options: {recursive?: boolean} = {}): void {
  try {
    withDir(dirname(path), {purpose: `remove ${path}`}, (dir) => {
      if (options.recursive) rmSync(dir.entry(basename(path)), {recursive: true, force: true});
      else {
        try {
          unlinkSync(dir.entry(basename(path)));
        } catch (error) {
          if (!isErrno(error, 'ENOENT')) throw error;
        }
      }
    });
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return;
    throw error;
  }
}

/** Makes the directory and any missing above it (mkdir -p) by the same safe walk. */
export function mkdirSafely(path: string, mode = 0o755): void {
  withDir(path, {create: mode}, () => undefined);
}
