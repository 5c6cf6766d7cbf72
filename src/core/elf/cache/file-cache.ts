import {readdirSync, type Stats} from 'node:fs';
import {copyRelocations, readElfHeaderSync, readElfSync, readProgramShapeSync, type ElfProgramShape, relocatedUndefinedNames, staticTlsReferences, type CopyReference, type LookedUp, type StaticTlsReference} from '../read/elf/index.js';
import type {ElfHeaderInfo, ElfInfo} from '../read/elf/types.js';
import {identity, statOrNull, type InputRecorder} from './inputs.js';
import {isInside, normalRoot, realpathIn} from '../read/machine/sysroot.js';

/**
 * Per-process cache of parsed ELF files keyed by (dev, ino, size, mtime), so a file that
 * changes is read again. The reader is synchronous (each file is opened, read and closed in one
 * go: a directory of 900 libraries never holds more than one descriptor open), and so is this
 * cache; the promise-returning forms are for callers that want them.
 */
const MAX_ENTRIES = 8192;
const elfCache = new Map<string, ElfInfo>();
const headerCache = new Map<string, ElfHeaderInfo>();

/**
 * The identity of a file's contents: (dev, ino, size, mtime). The path is left out on purpose:
 * /lib/x86_64-linux-gnu/libc.so.6 (from the cache) and /usr/lib/x86_64-linux-gnu/libc.so.6 (a
 * directory target) are one file on merged-/usr systems and are parsed once. ElfInfo.path is then
 * the first path read; the loader model keeps its own path per object.
 */
export function fileKey(path: string, st: Stats): string {
  void path;
  let key = fileKeys.get(st);
  if (key === undefined) fileKeys.set(st, key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`);
  return key;
}

/**
 * Each Stats object's key, made once: the FileView hands out one Stats object per path, and ld.so
 * (read again for every process of a check) or a library the search finds is asked for by it
 * hundreds of times; a fractional mtime costs a float-to-string conversion each time.
 */
const fileKeys = new WeakMap<Stats, string>();

export {inodeKey} from './inputs.js';

/** A failed read throws and is not cached: the next run may find the file repaired. */
function remember<T>(map: Map<string, T>, key: string, make: () => T): T {
  let entry = map.get(key);
  if (entry === undefined) {
    entry = make();
    if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
    map.set(key, entry);
  }
  return entry;
}

/**
 * ElfInfo for a file whose stat is known: its undefined symbols as objects, definitions through
 * its hash table (`info.lookup`), which is all the loader model asks of a file.
 */
export function cachedElfSync(path: string, st: Stats): ElfInfo {
  return remember(elfCache, fileKey(path, st), () => readElfSync(path, {symbols: 'undefined'}));
}

const shapeCache = new Map<string, ElfProgramShape>();

/** A file's program shape: from its parsed whole when that is at hand, else from its program headers alone. */
export function cachedProgramShapeSync(path: string, st: Stats): ElfProgramShape {
  const key = fileKey(path, st);
  return elfCache.get(key) ?? remember(shapeCache, key, () => readProgramShapeSync(path));
}

const lookedUp = new WeakMap<ElfInfo, ReadonlyMap<string, LookedUp> | null>();

/**
 * The names of the undefined symbols a relocation of this object names: the only ones ld.so
 * looks up (issue 12 item 4), each with the rank of the first such relocation (the order a run
 * meets their lookups in) and whether one is bound at relocation even under lazy binding. Read on demand: only objects with references nothing defines are
 * asked, so a check of 470 libraries reads a handful of relocation tables. Null when the file
 * cannot be read again (then every reference counts, as before).
 */
export function lookedUpNames(info: ElfInfo): ReadonlyMap<string, LookedUp> | null {
  if (lookedUp.has(info)) return lookedUp.get(info)!;
  let names: ReadonlyMap<string, LookedUp> | null = null;
  try {
    names = relocatedUndefinedNames(info.path);
  } catch {
    names = null;
  }
  lookedUp.set(info, names);
  return names;
}

/** `read` of each object's file, once per parsed object; `empty` when the file cannot be read again. */
function readOnce<T>(read: (path: string) => T | null, empty: T): (info: ElfInfo) => T {
  const memo = new WeakMap<ElfInfo, T>();
  return (info) => {
    let value = memo.get(info);
    if (value === undefined) {
      try {
        value = read(info.path) ?? empty;
      } catch {
        value = empty;
      }
      memo.set(info, value);
    }
    return value;
  };
}

/** The copy relocations of a program (CopyReference), read on demand: only programs are asked. */
export const copyReferences: (info: ElfInfo) => readonly CopyReference[] = readOnce(copyRelocations, []);

/** An object's initial-exec TLS relocations (StaticTlsReference), read on demand: only DF_STATIC_TLS objects a dlopen brings are asked. */
export const staticTlsOf: (info: ElfInfo) => readonly StaticTlsReference[] = readOnce(staticTlsReferences, []);

export async function cachedElf(path: string, st: Stats): Promise<ElfInfo> {
  return cachedElfSync(path, st);
}

/**
 * The ELF header of a search candidate. A candidate that passes the header checks is read whole
 * right after (cachedElf), so it is read whole now: one open and one set of reads instead of two.
 * A file the full reader rejects gets its header read on its own, as before.
 */
export function cachedHeaderSync(path: string, st: Stats): ElfHeaderInfo {
  const key = fileKey(path, st);
  const full = elfCache.get(key);
  if (full) return full;
  return remember(headerCache, key, () => {
    try {
      return cachedElfSync(path, st);
    } catch {
      return readElfHeaderSync(path);
    }
  });
}

/**
 * A view of the file system for one check: directory listings and stats are read once
 * (ld.so probes every search directory and each of its hwcaps subdirectories for every name;
 * a listing turns those probes into set lookups).
 */
export class FileView {
  private readonly listings = new Map<string, Set<string> | null>();
  /** Per directory key: the host path listed and the identity of that directory before it was listed. */
  private readonly listedAs = new Map<string, {host: string; id: string}>();
  private readonly stats = new Map<string, Stats | null>();
  private readonly subdirs = new Map<string, Map<readonly string[], readonly string[]>>();

  private readonly root: string;
  private readonly hosts = new Map<string, string | null>();

  /**
   * Set while a persistent verdict cache is in use: every answer this view gives is recorded
   * (cached or not), so each checked file's result carries exactly what it depended on.
   */
  recorder: InputRecorder | null = null;

  /** @param sysroot CUDAENV_SYSROOT: links inside it resolve inside it (./sysroot.ts). */
  constructor(readonly cwd: string, sysroot = '') {
    this.root = normalRoot(sysroot);
  }

  /**
   * The host path to open for `path`: itself, or inside the sysroot with the image's links
   * resolved in the image (null: nothing there). ld.so in the image would see the same file.
   */
  hostPath(path: string): string | null {
    if (!isInside(this.root, path)) return path;
    let host = this.hosts.get(path);
    if (host === undefined) {
      host = realpathIn(this.root, path) ?? null;
      this.hosts.set(path, host);
    }
    this.recorder?.fact('h', path, host ?? '-');
    return host;
  }

  /**
   * The check's working directory, for a path the loader resolves against it: recorded, since
   * the result then depends on it (a check from another directory must not reuse it).
   */
  workingDir(): string {
    this.recorder?.fact('w', '', this.cwd);
    return this.cwd;
  }

  /** Names in a directory ('' = cwd), or null when it cannot be listed. */
  list(dir: string): Set<string> | null {
    // A relative search directory ('d1/' of an RPATH, '' of an empty element) is the check's cwd, not Node's.
    const key = dir.startsWith('/') ? dir : dir === '' ? this.workingDir() : `${this.workingDir()}/${dir}`;
    let names = this.listings.get(key);
    if (names === undefined) {
      const host = this.hostPath(key);
      names = null;
      if (host !== null) {
        // The directory's identity before its listing: an entry added or removed later changes it.
        if (this.recorder) {
          const st = statOrNull(host);
          const id = st ? identity(st) : '-';
          this.listedAs.set(key, {host, id});
          if (st) this.recorder.stat(host, st, id);
          else this.recorder.fact('s', host, '-');
        }
        try {
          names = new Set(readdirSync(host));
        } catch {
          names = null;
        }
      }
      this.listings.set(key, names);
    } else if (this.recorder) {
      this.hostPath(key); // records how an image path resolved (a no-op outside CUDAENV_SYSROOT)
      const seen = this.listedAs.get(key);
      if (seen) this.recorder.fact('s', seen.host, seen.id);
    }
    return names;
  }

  /**
   * The subdirectories `${dir}${sub}/` among `subs` that can be listed, in order. Most search
   * directories have none of the eight hwcaps/tls subdirectories: asking once per directory
   * spares every search of every name eight probes there (has() is false for them anyway).
   */
  listableSubdirs(dir: string, subs: readonly string[]): readonly string[] {
    let bySubs = this.subdirs.get(dir);
    if (!bySubs) this.subdirs.set(dir, bySubs = new Map());
    let found = bySubs.get(subs);
    if (!found) {
      found = subs.filter((sub) => this.list(`${dir}${sub}/`) !== null);
      bySubs.set(subs, found);
    } else if (this.recorder) {
      // The answer rests on each subdirectory's listing (or its absence): recorded for this file too.
      for (const sub of subs) this.list(`${dir}${sub}/`);
    }
    return found;
  }

  /** Does `dir` hold an entry `name` (without following it)? */
  has(dir: string, name: string): boolean {
    return this.list(dir)?.has(name) ?? false;
  }

  /** stat (following links), null when it fails. Synchronous and cached: probes are many and small. */
  stat(path: string): Stats | null {
    let entry = this.stats.get(path);
    if (entry === undefined) {
      entry = this.statSync(path);
      this.stats.set(path, entry);
    } else if (this.recorder) {
      const host = this.hostPath(path);
      if (host !== null) this.recordStat(host, entry);
    }
    return entry;
  }

  /** Each path this view stat'ed that exists, outside the sysroot (where the path is the host's), with its stat. */
  *statsMade(): Generator<[string, Stats]> {
    for (const [path, st] of this.stats) if (st !== null && !isInside(this.root, path)) yield [path, st];
  }

  statSync(path: string): Stats | null {
    const host = this.hostPath(path);
    const st = host === null ? null : statOrNull(host);
    if (this.recorder && host !== null) this.recordStat(host, st);
    return st;
  }

  /** The identity string is made once per Stats object: a library's stat is recorded by hundreds of checked files. */
  private readonly ids = new WeakMap<Stats, string>();

  private recordStat(host: string, st: Stats | null): void {
    if (st === null) {
      this.recorder!.fact('s', host, '-');
      return;
    }
    let id = this.ids.get(st);
    if (id === undefined) this.ids.set(st, id = identity(st));
    this.recorder!.stat(host, st, id);
  }
}
