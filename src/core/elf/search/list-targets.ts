import type {Stats} from 'node:fs';
import {readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {kernelPath} from '../read/machine/kernel-path.js';
import {isErrno, UsageError} from '../../errors.js';
import {inodeKey} from '../cache/inputs.js';
import {isInside, normalRoot, realpathIn} from '../read/machine/sysroot.js';

/**
 * Which files a check covers, before any is read (check-targets.ts reads them): a check answered
 * from the verdict cache lists its targets and reads nothing, so this file loads no reader beyond
 * stat and readdir.
 */

/** The start of the skip reason of a file that starts like ELF but cannot be read as one. */
export const DAMAGED = 'a damaged ELF file: ';

/** The skip reason of a separate debug file (what /usr/lib/debug/.build-id holds). */
export const DEBUG_INFO = 'a separate debug-info file (objcopy --only-keep-debug): it holds what a debugger reads, ' +
  'no code or tables, and the loader refuses it ("object file has no dynamic section")';

/** The skip reason of a 0-byte file. */
export const EMPTY = 'an empty file (0 bytes), not a shared object';

/** A file a check covers, before it is read: named on the command line, or found in a directory. */
export interface ListedFile {
  path: string;
  explicit: boolean;
  /** The host path to read, when it differs (inside a sysroot, the image's links followed in the image). */
  file?: string;
  /**
   * The file's stat (following links) when it was listed: its identity before it is read, so
   * that the check stats each file once (check-targets.ts readListedSync).
   */
  stat?: Stats;
}

/**
 * The files behind the targets, in order, each file once (link chains such as libfoo.so ->
 * libfoo.so.1 -> libfoo.so.1.2 name one file). Only stats: nothing is read yet.
 */
export function listTargets(targets: string[], options: {recursive?: boolean; cwd?: string; sysroot?: string} = {}): ListedFile[] {
  const cwd = options.cwd ?? process.cwd();
  const root = normalRoot(options.sysroot);
  // Inside the sysroot a link resolves in the image; a target there may be such a link.
  const host = (path: string): string => (isInside(root, path) ? realpathIn(root, path) ?? `${path}\0missing` : path);
  const statHost = (path: string): Stats => statSync(host(path));
  const listed = (path: string, explicit: boolean, stat: Stats): ListedFile => {
    const file = host(path);
    return file === path ? {path, explicit, stat} : {path, explicit, file, stat};
  };
  const out: ListedFile[] = [];
  const seenFiles = new Set<string>();
  const seenDirs = new Set<string>();

  const visitDir = (dir: string, depth: number): void => {
    // Synchronous listing and stats: a thousand small syscalls cost less than a thousand promises.
    const dst = statHost(dir);
    if (seenDirs.has(inodeKey(dst))) return;
    seenDirs.add(inodeKey(dst));
    const subdirs: string[] = [];
    for (const name of readdirSync(host(dir)).sort()) {
      const path = join(dir, name);
      let st: Stats;
      try {
        st = statHost(path);
      } catch {
        continue; // a dangling link or a file removed meanwhile
      }
      if (st.isDirectory()) {
        if (options.recursive && depth < 32) subdirs.push(path);
        continue;
      }
      if (!st.isFile() || seenFiles.has(inodeKey(st))) continue;
      seenFiles.add(inodeKey(st));
      out.push(listed(path, false, st));
    }
    for (const sub of subdirs) visitDir(sub, depth + 1);
  };

  for (const target of targets) {
    const path = kernelPath(target, cwd);
    let st: Stats;
    try {
      st = statHost(path);
    } catch (error) {
      const code = isErrno(error) ? error.code : undefined;
      const why = code === 'ELOOP' ? 'too many levels of symbolic links (a link that leads back to itself)'
        : code === 'EACCES' ? 'permission denied (a directory on the way cannot be searched)'
        : code === 'ENOTDIR' ? 'a component of the path is not a directory'
        : code === 'ENOENT' || code === undefined ? 'no such file or directory'
        : `cannot be read (${code})`;
      throw new UsageError(`${target}: ${why}`, code === 'ELOOP' ? 'Fix the link, or give the file it should lead to.' : 'Give shared objects or directories that hold them.');
    }
    if (st.isDirectory()) {
      visitDir(path, 0);
      continue;
    }
    if (seenFiles.has(inodeKey(st))) continue;
    seenFiles.add(inodeKey(st));
    out.push(listed(path, true, st));
  }
  return out;
}
