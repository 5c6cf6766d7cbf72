import {statSync} from 'node:fs';

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
