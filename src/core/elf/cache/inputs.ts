import {realpathSync, statSync, type Stats} from 'node:fs';
import {realpathIn} from '../read/machine/sysroot.js';

/**
 * What the loader model learnt from the file system while it checked one file, each fact as
 * (kind, path) -> the value seen, so that a later run can tell, by asking the same questions
 * again, whether the check's result still holds (./verdict-cache.ts). Every question is asked
 * before the data it guards is read (a stat before the file's tables, a directory's stat before
 * its listing): a change after the question is then seen by the next run, never hidden.
 *
 *   s  stat (following links) of a host path: the file's identity, or '-' when there is none
 *   r  realpath of a path, or '-'
 *   h  a path inside CUDAENV_SYSROOT resolved in the image (realpathIn), or '-'
 *   p  the loader platform for 'class:machine' (hwcaps, directories, glibc rules), as JSON
 *   w  the working directory, where a relative path (an RPATH entry, an empty search entry, a
 *      DT_NEEDED name with a slash) made the result depend on it
 */
export type InputKind = 's' | 'r' | 'h' | 'p' | 'w';

/**
 * A file's identity: device, inode, size, mode and both change times. Any write changes mtime
 * and ctime, a rename or link swap changes the inode, and ctime cannot be set from user space;
 * a write within the file system's timestamp tick of the read is excluded by the caller
 * (inputs newer than a settling time are never cached).
 */
export function identity(st: Stats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mode}:${st.mtimeMs}:${st.ctimeMs}`;
}

/** The file's identity for ld.so's "already loaded" check (st_dev, st_ino). */
export function inodeKey(st: Stats): string {
  return `${st.dev}:${st.ino}`;
}

export function inputKey(kind: InputKind, path: string): string {
  return `${kind}\0${path}`;
}

/** The facts of sets, as (kind, path, value), in order. */
export function factsIn(...sets: InputSet[]): Array<[InputKind, string, string]> {
  const facts: Array<[InputKind, string, string]> = [];
  for (const set of sets) {
    for (const [key, value] of set.values) {
      const sep = key.indexOf('\0');
      facts.push([key.slice(0, sep) as InputKind, key.slice(sep + 1), value]);
    }
  }
  return facts;
}

/** The facts of one file's check (or of the whole check, for what every file shares). */
export interface InputSet {
  values: Map<string, string>;
  /** The newest mtime or ctime among the identities (ms). */
  newest: number;
  /** Device of each identity, with one path on it (for the file system type). */
  devices: Map<number, string>;
}

function emptySet(): InputSet {
  return {values: new Map(), newest: 0, devices: new Map()};
}

/**
 * The facts recorded while a capture was open (InputRecorder.capture), in the order they were
 * recorded: [input key, value, the stat's newest time (0: none), its device (-1: none), its path].
 */
export type CapturedFacts = ReadonlyArray<readonly [string, string, number, number, string]>;

export class InputRecorder {
  /** Facts every file's check depends on (ld.so.cache, /etc/ld.so.preload, --exe). */
  readonly shared: InputSet = emptySet();
  private current: InputSet = this.shared;
  private captured: Array<[string, string, number, number, string]> | null = null;

  /** Starts the facts of one file; until end(), everything recorded is its own. */
  begin(): void {
    this.current = emptySet();
  }

  end(): InputSet {
    const set = this.current;
    this.current = this.shared;
    return set;
  }

  /** A stat the model made of host path `path` (null: nothing there or not reachable). */
  stat(path: string, st: Stats | null, id?: string): void {
    if (st === null) {
      this.put(inputKey('s', path), '-', 0, -1, path);
      return;
    }
    this.put(inputKey('s', path), id ?? identity(st), st.mtimeMs > st.ctimeMs ? st.mtimeMs : st.ctimeMs, st.dev, path);
  }

  /** A fact already in value form (a stat's identity recorded earlier, an lstat, a realpath, a platform). */
  fact(kind: InputKind, path: string, value: string): void {
    this.put(inputKey(kind, path), value, 0, -1, path);
  }

  private put(key: string, value: string, newest: number, dev: number, path: string): void {
    const set = this.current;
    set.values.set(key, value);
    if (newest > set.newest) set.newest = newest;
    if (dev >= 0 && !set.devices.has(dev)) set.devices.set(dev, path);
    this.captured?.push([key, value, newest, dev, path]);
  }

  /**
   * Starts keeping a copy of every fact recorded from now on, until the returned function is
   * called; it gives them back. For an answer computed once and reused by later files' checks
   * (the loader model's search, ../search/search-memo.ts): each file that reuses it must depend
   * on the same facts as the file that computed it, so they are replayed into its record. A
   * capture opened inside another passes its facts on to the outer one as well.
   */
  capture(): () => CapturedFacts {
    const outer = this.captured;
    const mine: Array<[string, string, number, number, string]> = [];
    this.captured = mine;
    return () => {
      this.captured = outer;
      if (outer) outer.push(...mine);
      return mine;
    };
  }

  /** Records again, in the current file's set, facts captured while another file was checked. */
  replay(facts: CapturedFacts): void {
    for (const [key, value, newest, dev, path] of facts) this.put(key, value, newest, dev, path);
  }

  /** stat(2) of `path` now, recorded, for callers outside the FileView (ld.so.cache, the checked file itself). */
  statNow(path: string): Stats | null {
    const st = statOrNull(path);
    this.stat(path, st);
    return st;
  }
}

export function statOrNull(path: string): Stats | null {
  try {
    return statSync(path, {throwIfNoEntry: false}) ?? null;
  } catch {
    return null;
  }
}

/** The value a fact has now, computed as the model computed it; `platform` answers kind 'p', `cwd` kind 'w'. */
export function currentValue(kind: InputKind, path: string, sysroot: string, platform: (key: string) => string, cwd = process.cwd()): string {
  switch (kind) {
    case 's': {
      const st = statOrNull(path);
      return st ? identity(st) : '-';
    }
    case 'r':
      try {
        return realpathSync.native(path);
      } catch {
        return '-';
      }
    case 'h':
      return realpathIn(sysroot, path) ?? '-';
    case 'p':
      return platform(path);
    case 'w':
      return cwd;
    default:
      return '\0unknown';
  }
}
