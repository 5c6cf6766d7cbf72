import {existsSync, readdirSync, readFileSync, statSync, type Dirent} from 'node:fs';
import {join} from 'node:path';
import {writeFileSafely} from '../safe-fs/index.js';
import type {StorePaths} from '../store/paths.js';
import {switchDir} from './switch-index.js';

/**
 * Results of the check after a switch, per version, in two files under switch/:
 *   check-LABEL.json  what the CLI validates: the fingerprint (path, size, mtime, inode of every
 *                     shared object in the watched directories) of each entry;
 *   check-LABEL       the same entries for the shell hook, as lines it reads with `read`:
 *                     K<TAB>s<LD_LIBRARY_PATH> or K<TAB>u (unset)<TAB><contextKey: VIRTUAL_ENV|CONDA_PREFIX|
 *                       python on PATH|PYENV_VERSION|PYTHONPATH|pyenv's version file|LD_PRELOAD|
 *                       GLIBC_TUNABLES|LD_BIND_NOW|the directory, where a relative entry makes it count>
 *                     W<TAB><watched directory>   (the hook: stale when it is newer than the file, or gone)
 *                     M<TAB><watched directory>   (absent when written: stale once it exists)
 *                     L<TAB><the line to print>
 * Whenever the files are written, every kept entry is revalidated, so an old entry never
 * looks fresh to the hook only because the file is new.
 */
export interface CacheKey {
  /** The LD_LIBRARY_PATH the switch produces; undefined when unset. */
  ldLibraryPath: string | undefined;
  /** contextKey (./check-context.ts): the rest of what decides the result, as the shell hook can tell it without starting a process. */
  context: string;
}

export interface CacheEntry extends CacheKey {
  watched: string[];
  /** The watched directories that did not exist when the entry was written (set by writeCheck). */
  absent?: string[];
  fingerprint: string;
  line: string;
}

const MAX_ENTRIES = 8;

/**
 * Hash of every shared object (name containing ".so") directly in the watched directories, and
 * of the names of the directories in them: a package directory pip adds to site-packages
 * (torch/, nvidia/, nvidia/cublas/) or a version added to the store brings libraries the check
 * must look at, though no shared object of a watched directory changed. Other files (a README
 * beside the libraries) change nothing.
 */
export function fingerprint(watched: string[]): string {
  const hash = crypto().createHash('sha256');
  for (const dir of watched) {
    hash.update(`D\0${dir}\0`);
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, {withFileTypes: true}).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    } catch {
      hash.update('missing\0');
      continue;
    }
    for (const entry of entries) {
      const name = entry.name;
      if (!name.includes('.so')) {
        // A link may lead to a directory (a registered toolkit in the store): named all the same.
        if (entry.isDirectory() || entry.isSymbolicLink()) hash.update(`d\0${name}\0`);
        continue;
      }
      try {
        const st = statSync(join(dir, name), {bigint: true});
        hash.update(`${name}\0${st.size}\0${st.mtimeNs}\0${st.ino}\0`);
      } catch {
        hash.update(`${name}\0dangling\0`);
      }
    }
  }
  return hash.digest('hex');
}

function files(paths: StorePaths, label: string): {json: string; text: string} {
  const dir = switchDir(paths);
  return {json: join(dir, `check-${label}.json`), text: join(dir, `check-${label}`)};
}

function readEntries(paths: StorePaths, label: string): CacheEntry[] {
  try {
    const data = JSON.parse(readFileSync(files(paths, label).json, 'utf8')) as {entries?: unknown};
    if (!Array.isArray(data.entries)) return [];
    return data.entries.filter((e): e is CacheEntry =>
      typeof e === 'object' && e !== null && typeof (e as CacheEntry).line === 'string' &&
      typeof (e as CacheEntry).fingerprint === 'string' && Array.isArray((e as CacheEntry).watched));
  } catch {
    return []; // missing or damaged: the cache is only a cache
  }
}

function sameKey(a: CacheKey, b: CacheKey): boolean {
  return (a.ldLibraryPath ?? null) === (b.ldLibraryPath ?? null) && a.context === b.context;
}

function fresh(entry: CacheEntry): boolean {
  return fingerprint(entry.watched) === entry.fingerprint;
}

/** The cached entry for this key, when nothing it depends on changed. */
export function lookupCheck(paths: StorePaths, label: string, key: CacheKey): CacheEntry | undefined {
  const entry = readEntries(paths, label).find((e) => sameKey(e, key));
  return entry && fresh(entry) ? entry : undefined;
}

/**
 * The cached entry for this key as the shell hook judges it (its text file is newer than every
 * watched directory), without the fingerprint: for `cudaenv use`, which then trusts what the
 * auto-switch on cd trusts, and skips the stat of every library a full fingerprint needs.
 */
export function lookupCheckAsHook(paths: StorePaths, label: string, key: CacheKey): CacheEntry | undefined {
  const entry = readEntries(paths, label).find((e) => sameKey(e, key));
  return entry && !hookSeesStale(paths, label, entry) ? entry : undefined;
}

/**
 * Whether the hook would distrust this (fingerprint-valid) entry: its text file is missing or
 * older than one of the watched directories, one of them is gone, or one absent when it was
 * written exists now. Seconds are compared too, as fish's hook does.
 */
export function hookSeesStale(paths: StorePaths, label: string, entry: CacheEntry): boolean {
  let file: bigint;
  try {
    file = statSync(files(paths, label).text, {bigint: true}).mtimeNs;
  } catch {
    return true;
  }
  const absent = new Set(Array.isArray(entry.absent) ? entry.absent : []);
  for (const dir of entry.watched) {
    if (absent.has(dir)) {
      if (existsSync(dir)) return true;
      continue;
    }
    try {
      const m = statSync(dir, {bigint: true}).mtimeNs;
      if (m > file || m / 1_000_000_000n >= file / 1_000_000_000n) return true;
    } catch {
      return true;
    }
  }
  return false;
}

// Values the hook could not read back from one line are kept out of the text file.
const LINE_SAFE = /^[^\t\n\r]*$/;

export function storeCheck(paths: StorePaths, label: string, entry: CacheEntry): void {
  try {
    writeCheck(paths, label, entry);
  } catch (error) {
    // A read-only store (shared on a cluster, no write permission) still serves switches:
    // the result is only not cached.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS') throw error;
  }
}

function writeCheck(paths: StorePaths, label: string, entry: CacheEntry): void {
  const kept = readEntries(paths, label).filter((e) => !sameKey(e, entry) && fresh(e));
  // A directory that does not exist (an LD_LIBRARY_PATH entry for a toolkit not installed here,
  // a site-packages not made yet) is the hook's `M` line: stale once it exists, not before, so
  // the switches that follow are answered from the cache instead of each starting the CLI.
  const entries = [entry, ...kept].slice(0, MAX_ENTRIES).map((e) => ({...e, absent: e.watched.filter((w) => !existsSync(w))}));
  const {json, text} = files(paths, label);
  // A cache: readers treat a missing or damaged file as empty, so no fsync (it cost a first
  // switch tens of milliseconds on a busy disk).
  writeFileSafely(json, `${JSON.stringify({entries}, null, 1)}\n`, {mode: 0o644, durable: false});
  const lines = [`# cudaenv: check results for CUDA ${label}, read by the shell hook (safe to delete)`];
  for (const e of entries) {
    if (![e.ldLibraryPath ?? '', e.context, e.line, ...e.watched].every((v) => LINE_SAFE.test(v))) continue;
    lines.push(`K\t${e.ldLibraryPath === undefined ? 'u' : `s${e.ldLibraryPath}`}\t${e.context}`);
    const absent = new Set(e.absent);
    for (const w of e.watched) lines.push(`${absent.has(w) ? 'M' : 'W'}\t${w}`);
    lines.push(`L\t${e.line}`);
  }
  writeFileSafely(text, `${lines.join('\n')}\n`, {mode: 0o644, durable: false});
}

/** node:crypto on first use: `cudaenv use` and the shell's fast paths load this module without hashing. */
function crypto(): typeof import('node:crypto') {
  return process.getBuiltinModule('node:crypto');
}
