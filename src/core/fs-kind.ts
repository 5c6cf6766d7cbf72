import {closeSync, openSync, readSync, statSync} from 'node:fs';

/** Is there a regular file at `path` (links followed)? False for anything missing or unreadable. */
export function isFile(path: string): boolean {
  try {
    return statSync(path, {throwIfNoEntry: false})?.isFile() ?? false;
  } catch {
    return false;
  }
}

/** Is there a directory at `path` (links followed)? False for anything missing or unreadable. */
export function isDir(path: string): boolean {
  try {
    return statSync(path, {throwIfNoEntry: false})?.isDirectory() ?? false;
  } catch {
    return false;
  }
}

/** Do the file's first bytes read `magic` (latin1: '\x7fELF', '#!')? False for anything unreadable or shorter. */
export function startsWith(path: string, magic: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(magic.length);
    return readSync(fd, head, 0, magic.length, 0) === magic.length && head.toString('latin1') === magic;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
