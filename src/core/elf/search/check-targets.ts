import type {Stats} from 'node:fs';
import {closeSync, constants, openSync, readSync} from 'node:fs';
import {UsageError} from '../../errors.js';
import {cachedElfSync} from '../cache/file-cache.js';
import {statOrNull, type InputRecorder} from '../cache/inputs.js';
import {ElfError} from '../read/elf/index.js';
import {DF_1_PIE} from './loader-process.js';
import type {ElfInfo} from '../read/elf/types.js';
import {DAMAGED, DEBUG_INFO, EMPTY, listTargets, type ListedFile} from './list-targets.js';

/**
 * Which files a check covers: named shared objects, and every ELF shared object in named
 * directories. Anything else found in a directory (linker scripts such as libc.so, static
 * archives, headers) is skipped with a note, never an error.
 */
export interface TargetFile {
  path: string;
  info: ElfInfo;
  stat: Stats;
}

export interface Targets {
  files: TargetFile[];
  skipped: Array<{path: string; reason: string}>;
}

const ET_EXEC = 2;
const ET_DYN = 3;
const GONE = 'disappeared while being checked';

/**
 * Why a non-ELF file is not a library, in a word a user recognises. Synchronous: a library
 * directory holds a hundred such files, and a thread-pool round trip each cost more than the read.
 */
export function describeNonElf(path: string): string {
  let head = '';
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const buf = Buffer.alloc(512);
      const bytesRead = readSync(fd, buf, 0, 512, 0);
      head = buf.toString('latin1', 0, bytesRead);
    } finally {
      closeSync(fd);
    }
  } catch {
    return 'not readable';
  }
  if (head.startsWith('!<arch>')) return 'a static archive, not a shared object';
  if (/GNU ld script|\b(GROUP|INPUT|OUTPUT_FORMAT)\s*\(/.test(head)) return 'a linker script (used only when linking), not a shared object';
  return 'not an ELF file';
}

/** Classifies one file: a checkable ELF shared object, or the reason to skip it. */
function classify(path: string, st: Stats, explicit = false, file = path): TargetFile | {skip: string} {
  // Nothing to call damaged: an empty file (an interrupted copy, a placeholder) is no ELF file at all.
  if (st.size === 0) return {skip: EMPTY};
  try {
    // One read for the header and the tables: nearly every file in a library directory is a library.
    const info = cachedElfSync(file, st);
    // A program named explicitly is checked like one ld.so starts; in a directory only libraries count.
    if (explicit && info.type === ET_EXEC) return {path, info, stat: st};
    if (info.type !== ET_DYN) return {skip: `an ELF ${info.type === 2 ? 'executable' : info.type === 1 ? 'relocatable object' : `file of type ${info.type}`}, not a shared object`};
    if (info.dynamic === 'debug-info') return {skip: DEBUG_INFO};
    if (info.dynamic === 'none') return {skip: 'an ELF shared object without a dynamic section: the loader refuses it ("object file has no dynamic section")'};
    if ((info.flags1 & DF_1_PIE) !== 0 && !explicit) return {skip: 'a position-independent executable, not a shared object'};
    return {path, info, stat: st};
  } catch (error) {
    if (error instanceof ElfError) {
      if (error.reason === 'not-elf') return {skip: describeNonElf(file)};
      // Removed since it was listed (and stat'ed).
      if (error.reason === 'io' && error.errno === 'ENOENT') return {skip: GONE};
      // Starts like ELF but does not parse: say so, or "X is <reason>" reads as nonsense and a directory hides it in a count.
      return {skip: `${DAMAGED}${error.message.startsWith(file) ? error.message.slice(file.length + 2) : error.message}`};
    }
    throw error;
  }
}

/** Every ELF shared object directly in `dir` (or below it with `recursive`), one path per file. */
export async function elfSharedObjectsIn(dir: string, options: {recursive?: boolean} = {}): Promise<string[]> {
  const t = await expandTargets([dir], {recursive: options.recursive});
  return t.files.map((f) => f.path);
}

/** Reads one listed file: the target, or why it is skipped. An explicit file that is not ELF is a usage error. */
export async function readListed(file: ListedFile): Promise<TargetFile | {skip: string}> {
  return readListedSync(file);
}

/**
 * readListed without a promise (the reader is synchronous). The file's identity is the stat made
 * when it was listed (or one made now), taken before it is read; `recorder` records it.
 */
export function readListedSync(file: ListedFile, recorder?: InputRecorder | null): TargetFile | {skip: string} {
  const host = file.file ?? file.path;
  const st = file.stat ?? statOrNull(host);
  recorder?.stat(host, st);
  if (!st) return {skip: GONE};
  const r = classify(file.path, st, file.explicit, host);
  if (file.explicit && 'skip' in r) {
    throw new UsageError(`${file.path} is ${r.skip}`, r.skip.startsWith(DAMAGED)
      ? 'The file is truncated or corrupt: reinstall the package it came from.'
      : r.skip === EMPTY
        ? 'The loader would stop at it with "file too short". If it should be a library, the copy was cut short: reinstall the package it came from.'
        : r.skip === DEBUG_INFO
          ? 'Check the library it was split from instead (the one whose build ID names this file).'
        : 'Give an ELF shared object (a .so file), a program, or a directory of them.');
  }
  return r;
}

export async function expandTargets(targets: string[], options: {recursive?: boolean; cwd?: string} = {}): Promise<Targets> {
  const listed = listTargets(targets, options);
  const results = await Promise.all(listed.map((f) => readListed(f)));
  const files: TargetFile[] = [];
  const skipped: Targets['skipped'] = [];
  for (const [i, r] of results.entries()) {
    if ('skip' in r) skipped.push({path: listed[i].path, reason: r.skip});
    else files.push(r);
  }
  return {files, skipped};
}
