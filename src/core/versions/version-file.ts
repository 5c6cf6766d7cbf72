import {closeSync, constants, fstatSync, lstatSync, openSync, readSync, statSync} from 'node:fs';
import {dirname, join, resolve} from 'node:path';
import {CudaenvError, isErrno} from '../errors.js';
import {leadingZeroNote, tryParseSpec, type Spec} from './spec.js';

/**
 * `.cuda-version` files come from cloned repositories: they are data, never code.
 * Everything here is a strict parse; nothing read is ever evaluated.
 */
export const VERSION_FILE = '.cuda-version';
export const MAX_VERSION_FILE_BYTES = 4096;
export const KNOWN_KEYS = new Set(['cudnn']);

export interface VersionFile {
  path: string;
  spec: Spec;
  /** `key=value` lines after the spec, kept for later features. */
  settings: Record<string, string>;
  warnings: string[];
}

/**
 * A `.cuda-version` that is a symbolic link to nothing: a loop, a missing target, a path through a
 * file. The shims and the shell hooks say it in these words (they cannot tell those apart without
 * starting a process: `[ -L f ] && [ ! -e f ]`).
 */
export const UNFOLLOWABLE_LINK = 'is a symbolic link that cannot be followed (its target is missing or out of reach, or the links loop)';

export class VersionFileError extends CudaenvError {
  readonly path: string;
  constructor(path: string, problem: string) {
    super(`${path}: ${problem}`, {
      hint: `Fix or remove ${path}; it must hold one CUDA version spec such as 12.4 on its first line.`,
      code: 'version-file',
    });
    this.path = path;
  }
}

const KEY_VALUE_RE = /^([a-z][a-z0-9_-]{0,31})=([A-Za-z0-9._+-]{0,64})$/;
// Tab, LF and CR are the only control characters a text file of this kind may hold.
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

export function parseVersionFileText(path: string, text: string): VersionFile {
  if (CONTROL_RE.test(text)) throw new VersionFileError(path, 'contains control characters or binary data');
  let spec: Spec | undefined;
  const settings: Record<string, string> = {};
  const warnings: string[] = [];
  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    // ASCII blanks only, as the shell hooks and shims trim ([[:space:]] in the C locale): a
    // no-break space is not trimmed away here and there alike.
    const line = raw.replace(/^[ \t\r]+|[ \t\r]+$/g, '');
    if (line === '' || line.startsWith('#')) continue;
    const where = `line ${i + 1}`;
    if (!spec) {
      spec = tryParseSpec(line);
      if (!spec) throw new VersionFileError(path, `${where} ${JSON.stringify(truncate(line))} is not a CUDA version spec${leadingZeroNote(line)}`);
      continue;
    }
    const kv = KEY_VALUE_RE.exec(line);
    if (!kv) throw new VersionFileError(path, `${where} ${JSON.stringify(truncate(line))} is neither a comment nor key=value`);
    const [, key, value] = kv as unknown as [string, string, string];
    if (!KNOWN_KEYS.has(key)) warnings.push(`${path}: ${where}: unknown key ${JSON.stringify(key)} ignored`);
    settings[key] = value;
  }
  if (!spec) throw new VersionFileError(path, 'holds no version spec');
  return {path, spec, settings, warnings};
}

function truncate(s: string): string {
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}

/** Reads and parses one `.cuda-version`; a directory, FIFO, device or oversized file is refused. */
export function readVersionFile(path: string): VersionFile {
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO put in place of the file must not hang the shell hook.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    if (isErrno(error, 'EISDIR')) throw new VersionFileError(path, 'is a directory, not a file');
    if (isUnfollowableLink(path)) throw new VersionFileError(path, UNFOLLOWABLE_LINK);
    throw new VersionFileError(path, `cannot be read (${(error as Error).message})`);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new VersionFileError(path, 'is a directory, not a file');
    if (!st.isFile()) throw new VersionFileError(path, 'is not a regular file (a FIFO, socket or device)');
    if (st.size > MAX_VERSION_FILE_BYTES) {
      throw new VersionFileError(path, `is ${st.size} bytes; a version file holds at most ${MAX_VERSION_FILE_BYTES}`);
    }
    const buf = Buffer.alloc(MAX_VERSION_FILE_BYTES + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buf, length, buf.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > MAX_VERSION_FILE_BYTES) {
        throw new VersionFileError(path, `holds more than ${MAX_VERSION_FILE_BYTES} bytes`);
      }
    }
    const bytes = buf.subarray(0, length);
    let text: string;
    try {
      // ignoreBOM keeps a byte-order mark in the text, so it is refused below, as the shells do.
      text = new TextDecoder('utf-8', {fatal: true, ignoreBOM: true}).decode(bytes);
    } catch {
      throw new VersionFileError(path, 'is not UTF-8 text (a binary file?)');
    }
    if (text.startsWith('\ufeff')) throw new VersionFileError(path, 'starts with a byte-order mark (BOM); save it as UTF-8 without one');
    return parseVersionFileText(path, text);
  } finally {
    closeSync(fd);
  }
}

/** A symbolic link that stat cannot follow: what `[ -L f ] && [ ! -e f ]` finds in the shells. */
function isUnfollowableLink(path: string): boolean {
  try {
    if (!lstatSync(path).isSymbolicLink()) return false;
  } catch {
    return false;
  }
  try {
    statSync(path);
    return false;
  } catch {
    return true;
  }
}

/**
 * The nearest `.cuda-version` at or above `dir`, or undefined. Unreadable directories are passed
 * over. Whatever stands there is the project's file, a symbolic link to nothing (a loop, a missing
 * target) too (lstat): passing over it would select the file above it or the global default, and
 * readVersionFile refuses it. The shims and the shell hooks look alike (`[ -e f ] || [ -L f ]`).
 */
export function findVersionFile(dir: string): string | undefined {
  let current = resolve(dir);
  for (;;) {
    const candidate = join(current, VERSION_FILE);
    try {
      lstatSync(candidate);
      return candidate;
    } catch (error) {
      if (!isErrno(error, 'ENOENT') && !isErrno(error, 'ENOTDIR') && !isErrno(error, 'EACCES')) {
        return candidate; // exists in some odd form: let readVersionFile name the problem
      }
    }
    const parent = dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

/** Text written by `cudaenv local`. */
export function formatVersionFile(specText: string): string {
  return `${specText}\n`;
}

/**
 * `cudaenv local` over an existing, valid file: only the spec line changes, so comments and
 * `key=value` lines (cudnn=9) the project keeps there are not lost.
 */
export function replaceSpecInText(text: string, specText: string): string {
  const lines = text.split('\n');
  const i = lines.findIndex((raw) => {
    const line = raw.trim();
    return line !== '' && !line.startsWith('#');
  });
  if (i < 0) return formatVersionFile(specText);
  lines[i] = `${specText}${lines[i]!.endsWith('\r') ? '\r' : ''}`;
  return lines.join('\n');
}
