import {Transform, type TransformCallback} from 'node:stream';
import {escapeControl} from '../text/control.js';

/**
 * Archives are untrusted. GNU tar extracts them (it keeps symlink chains and is the fastest
 * extractor measured), but only after this stream has read every header and passed it on:
 * it sits between `xz -dc` and `tar -x`, so tar sees exactly the entries checked here and
 * nothing else. Refused: absolute paths, `..`, symlinks or hard links that resolve outside
 * the extraction root (following the links already in the archive), hard links to anything
 * but a regular file of the archive, devices, FIFOs, unknown entry types, corrupt headers.
 * Setuid, setgid and sticky bits are cleared in the header itself (checksum recomputed).
 *
 * Paths are checked as tar will write them with `--strip-components=1`: every entry must lie
 * under one top directory (NVIDIA's `<name>-archive/`), which is dropped.
 */
export class ArchiveRefused extends Error {
  constructor(readonly entry: string, readonly reason: string) {
    // Names and link targets are the archive's bytes: shown with their control characters escaped.
    super(escapeControl(`refused entry ${JSON.stringify(entry)}: ${reason}`));
    this.name = 'ArchiveRefused';
  }
}

/** The entries' sizes (as their headers declare them) add up to more than the archive may expand to. */
export class ArchiveTooLarge extends ArchiveRefused {
  constructor(entry: string, readonly limit: number, why: string) {
    super(entry, `with it the archive's files add up to more than ${limit} bytes, ${why}`);
    this.name = 'ArchiveTooLarge';
  }
}

/** The entries' sizes add up to more than the disk has free: not hostile, but nothing to start. */
export class ArchiveNoRoom extends Error {
  constructor(readonly entry: string, readonly needed: number, readonly free: number) {
    super(`its files add up to more than ${needed} bytes, and the disk has ${free} bytes free`);
    this.name = 'ArchiveNoRoom';
  }
}

export interface GuardLimits {
  /** The most the entries' data may add up to (bytes), and why (for the message). */
  maxBytes?: number;
  maxWhy?: string;
  /** The space free where the archive is extracted (bytes). */
  freeBytes?: number;
}

/** The tar stream stops inside an entry: a broken archive, not a hostile one. */
export class ArchiveTruncated extends Error {
  constructor() {
    super('the tar stream ends in the middle of an entry');
    this.name = 'ArchiveTruncated';
  }
}

const BLOCK = 512;
const MAX_META = 1024 * 1024;
const MAX_LINK_HOPS = 40;
const ESCAPE = Symbol('escape');
const EMPTY = Buffer.alloc(0);
const PASS = Symbol('pass');
const HOLD = Symbol('hold');
const LOOP = Symbol('loop');

interface Header {
  name: string;
  mode: number;
  size: number;
  type: string;
  linkname: string;
}

/** An entry's header that cannot go out as it came: the meta headers held for it, its new mode. */
interface Release {
  held: Buffer[];
  mode: number | undefined;
}

export interface GuardStats {
  entries: number;
  symlinks: number;
  /** The entries' data as their headers declare it (sparse files are refused: this is what lands on disk). */
  bytes: number;
  top?: string;
}

export class TarGuard extends Transform {
  readonly stats: GuardStats = {entries: 0, symlinks: 0, bytes: 0};
  private pending = EMPTY;
  private state: 'header' | 'data' | 'meta' | 'end' = 'header';
  private remaining = 0;
  private metaType = '';
  private metaSize = 0;
  private metaChunks: Buffer[] = [];
  private metaGot = 0;
  /** Meta headers (long names, pax) held back until the entry they describe is checked. */
  private held: Buffer[] = [];
  private longName?: string;
  private longLink?: string;
  private pax: Record<string, string> = {};
  private zeroBlocks = 0;
  /** Symlinks created so far: resolved location -> target, as written in the archive. */
  private readonly links = new Map<string, string>();
  /** Links whose target climbs with `..`: adding another link may change where they land. */
  private readonly climbing = new Set<string>();
  private readonly files = new Set<string>();

  /**
   * `limits`: the entries' sizes are added up from their headers, each before tar sees it, so an
   * archive that would expand past `maxBytes` (or past the free space) is stopped at the header
   * that crosses the line, before its data is decompressed or written.
   */
  constructor(private readonly limits: GuardLimits = {}) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    try {
      this.pass(chunk, (b) => this.push(b));
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    try {
      this.finish();
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  /**
   * Checks the next bytes of the tar stream and hands what tar may see to `emit`, in order.
   * Unchanged bytes go out as slices of `chunk` itself, one per run (mostly the whole chunk):
   * a copy only for header blocks that span chunks or are rewritten, and for meta headers held
   * back until their entry is checked. Nothing goes out before every header up to it has been
   * checked, so tar never sees a refused entry's header (nor anything after it).
   */
  pass(chunk: Buffer, emit: (bytes: Buffer) => void): void {
    let offset = 0;
    let run = 0; // start of the bytes of `chunk` checked, unchanged and not yet emitted
    // Bytes are held back only while a header block is incomplete: top it up first.
    if (this.pending.length > 0) {
      const need = BLOCK - this.pending.length;
      if (chunk.length < need) {
        this.pending = Buffer.concat([this.pending, chunk]);
        return;
      }
      const block = Buffer.concat([this.pending, chunk.subarray(0, need)]);
      this.pending = EMPTY;
      offset = run = need;
      this.emitHeader(block, emit);
    }
    while (offset < chunk.length) {
      if (this.state === 'end') break; // after the end-of-archive blocks: padding, not passed on
      if (this.state === 'data') {
        const n = Math.min(this.remaining, chunk.length - offset);
        offset += n;
        this.remaining -= n;
        if (this.remaining === 0) this.state = 'header';
        continue;
      }
      if (this.state === 'meta') {
        if (offset > run) emit(chunk.subarray(run, offset));
        const n = Math.min(this.remaining, chunk.length - offset);
        const part = chunk.subarray(offset, offset + n);
        this.held.push(Buffer.from(part));
        if (this.metaGot < this.metaSize) this.metaChunks.push(Buffer.from(part.subarray(0, Math.min(part.length, this.metaSize - this.metaGot))));
        this.metaGot += n;
        offset = run = offset + n;
        this.remaining -= n;
        if (this.remaining === 0) {
          this.finishMeta();
          this.state = 'header';
        }
        continue;
      }
      if (chunk.length - offset < BLOCK) {
        if (offset > run) emit(chunk.subarray(run, offset));
        this.pending = Buffer.from(chunk.subarray(offset));
        return;
      }
      const block = chunk.subarray(offset, offset + BLOCK);
      const verdict = this.header(block);
      if (verdict !== PASS) {
        // Held back or replaced: what came before it goes now, the block itself never as-is.
        if (offset > run) emit(chunk.subarray(run, offset));
        run = offset + BLOCK;
        if (verdict === HOLD) this.held.push(Buffer.from(block));
        else this.emitReplaced(block, verdict, emit);
      }
      offset += BLOCK;
    }
    if (offset > run) emit(chunk.subarray(run, offset));
  }

  /** Whether the two end-of-archive blocks have passed (what follows is padding, not passed on). */
  get ended(): boolean {
    return this.state === 'end';
  }

  /** The stream has ended: it must end between entries (or after the end-of-archive blocks). */
  finish(): void {
    if (this.state === 'end' || (this.state === 'header' && this.pending.length === 0 && this.held.length === 0)) return;
    throw new ArchiveTruncated();
  }

  /** A header block assembled from two chunks (a copy, ours to keep or change). */
  private emitHeader(block: Buffer, emit: (bytes: Buffer) => void): void {
    const verdict = this.header(block);
    if (verdict === PASS) emit(block);
    else if (verdict === HOLD) this.held.push(block);
    else this.emitReplaced(block, verdict, emit);
  }

  /** The held meta headers, then the entry's header (its mode rewritten when `verdict.mode` says so). */
  private emitReplaced(block: Buffer, verdict: Release, emit: (bytes: Buffer) => void): void {
    for (const b of verdict.held) emit(b);
    if (verdict.mode === undefined) {
      emit(block);
      return;
    }
    const copy = Buffer.from(block);
    rewriteMode(copy, verdict.mode);
    emit(copy);
  }

  /**
   * Checks one header block. PASS: it goes to tar as it is, nothing held precedes it. HOLD: a
   * meta header, kept until the entry it describes is checked. Otherwise the held headers to
   * send before it and the mode to write into it (setuid, setgid and sticky cleared).
   */
  private header(block: Buffer): typeof PASS | typeof HOLD | Release {
    if (isZero(block)) {
      if (this.held.length > 0) throw new ArchiveRefused(this.longName ?? '(meta header)', 'a long-name or pax header is not followed by an entry');
      if (++this.zeroBlocks === 2) this.state = 'end';
      return PASS;
    }
    if (this.zeroBlocks > 0) throw new ArchiveRefused('(after end of archive)', 'a lone zero block inside the archive');
    const h = parseHeader(block);
    if (h.type === 'L' || h.type === 'K' || h.type === 'x' || h.type === 'g') {
      if (h.size > MAX_META) throw new ArchiveRefused(h.name, `a ${h.size}-byte meta header`);
      this.metaType = h.type;
      this.metaSize = h.size;
      this.metaChunks = [];
      this.metaGot = 0;
      this.remaining = roundUp(h.size);
      this.state = this.remaining > 0 ? 'meta' : 'header';
      if (this.remaining === 0) this.finishMeta();
      return HOLD;
    }
    const name = this.pax.path ?? this.longName ?? h.name;
    const linkname = this.pax.linkpath ?? this.longLink ?? h.linkname;
    const size = this.pax.size !== undefined ? Number(this.pax.size) : h.size;
    if (!Number.isSafeInteger(size) || size < 0) throw new ArchiveRefused(name, 'an invalid size');
    this.check(name, h.type, linkname, size);
    this.stats.bytes += size;
    const {maxBytes, freeBytes} = this.limits;
    if (maxBytes !== undefined && this.stats.bytes > maxBytes) throw new ArchiveTooLarge(name, maxBytes, this.limits.maxWhy ?? 'the most allowed');
    if (freeBytes !== undefined && this.stats.bytes > freeBytes) throw new ArchiveNoRoom(name, this.stats.bytes, freeBytes);
    this.stats.entries++;
    this.remaining = roundUp(size);
    this.state = this.remaining > 0 ? 'data' : 'header';
    // Clear setuid/setgid/sticky: a toolkit never needs them, and we extract as whoever runs us.
    const mode = (h.mode & 0o7000) !== 0 ? h.mode & 0o777 : undefined;
    const held = this.held;
    if (held.length > 0) {
      this.held = [];
      this.longName = undefined;
      this.longLink = undefined;
      this.pax = {};
    }
    return held.length === 0 && mode === undefined ? PASS : {held, mode};
  }

  private finishMeta(): void {
    const data = Buffer.concat(this.metaChunks);
    if (this.metaType === 'L') this.longName = cString(data);
    else if (this.metaType === 'K') this.longLink = cString(data);
    else {
      const records = parsePax(data);
      for (const key of Object.keys(records)) {
        if (key.startsWith('GNU.sparse')) throw new ArchiveRefused(records.path ?? '(pax header)', 'a sparse file');
      }
      if (this.metaType === 'g') {
        if ('path' in records || 'linkpath' in records || 'size' in records) throw new ArchiveRefused('(global pax header)', 'a global header that renames entries');
      } else {
        Object.assign(this.pax, records);
      }
    }
  }

  private check(name: string, type: string, linkname: string, size: number): void {
    const parts = this.stripped(name);
    if (parts.length === 0) {
      if (type !== '5') throw new ArchiveRefused(name, 'the top-level entry is not a directory');
      return;
    }
    const where = this.resolve(parts.slice(0, -1), true);
    if (where === ESCAPE) throw new ArchiveRefused(name, 'its directory is reached through a link that points outside the archive');
    if (where === LOOP) throw new ArchiveRefused(name, 'its directory is reached through a symlink loop');
    const key = [...where, parts.at(-1)!].join('/');
    switch (type) {
      case '0': case '\0': case '7':
        this.replaced(key);
        this.files.add(key);
        return;
      case '5':
        if (size !== 0) throw new ArchiveRefused(name, 'a directory with data');
        this.replaced(key);
        return;
      case '2': {
        if (size !== 0) throw new ArchiveRefused(name, 'a symlink with data');
        if (linkname === '') throw new ArchiveRefused(name, 'a symlink to nothing');
        if (linkname.startsWith('/')) throw new ArchiveRefused(name, `a symlink to the absolute path ${linkname}`);
        const target = this.resolve([...where, ...linkname.split('/')], true);
        if (target === ESCAPE) throw new ArchiveRefused(name, `a symlink to ${linkname}, outside the archive`);
        if (target === LOOP) throw new ArchiveRefused(name, `a symlink loop through ${linkname}`);
        this.replaced(key);
        this.links.set(key, linkname);
        if (linkname.split('/').includes('..')) this.climbing.add(key);
        this.stats.symlinks++;
        this.recheckClimbing(name);
        return;
      }
      case '1': {
        if (size !== 0) throw new ArchiveRefused(name, 'a hard link with data');
        if (linkname.startsWith('/')) throw new ArchiveRefused(name, `a hard link to the absolute path ${linkname}`);
        const targetParts = this.stripped(linkname, name);
        const target = this.resolve(targetParts, false);
        if (target === ESCAPE || target === LOOP) throw new ArchiveRefused(name, `a hard link to ${linkname}, outside the archive`);
        if (!this.files.has(target.join('/'))) throw new ArchiveRefused(name, `a hard link to ${linkname}, which is not a regular file of the archive`);
        this.replaced(key);
        this.files.add(key);
        return;
      }
      case '3': case '4':
        throw new ArchiveRefused(name, 'a device file');
      case '6':
        throw new ArchiveRefused(name, 'a FIFO');
      default:
        throw new ArchiveRefused(name, `an unsupported entry type ${JSON.stringify(type)}`);
    }
  }

  /** A path split into parts below the top directory; refuses absolute paths, `..` and a second top. */
  private stripped(path: string, entry = path): string[] {
    if (path.startsWith('/')) throw new ArchiveRefused(entry, `the absolute path ${path}`);
    // eslint-disable-next-line no-control-regex
    if (/[\x00]/.test(path)) throw new ArchiveRefused(entry, 'a NUL byte in a path');
    const parts = path.split('/').filter((p) => p !== '' && p !== '.');
    if (parts.includes('..')) throw new ArchiveRefused(entry, `the path ${path} climbs with ..`);
    if (parts.length === 0) throw new ArchiveRefused(entry, 'an empty path');
    this.stats.top ??= parts[0];
    if (parts[0] !== this.stats.top) throw new ArchiveRefused(entry, `it lies outside the archive's top directory ${this.stats.top}/`);
    return parts.slice(1);
  }

  /** Where a path lands, following the archive's own symlinks; ESCAPE if it leaves the root. */
  private resolve(parts: string[], followLast: boolean): string[] | typeof ESCAPE | typeof LOOP {
    const out: string[] = [];
    const queue = [...parts];
    let hops = 0;
    while (queue.length > 0) {
      const part = queue.shift()!;
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (out.length === 0) return ESCAPE;
        out.pop();
        continue;
      }
      out.push(part);
      const target = this.links.get(out.join('/'));
      if (target !== undefined && (queue.length > 0 || followLast)) {
        if (++hops > MAX_LINK_HOPS) return LOOP;
        if (target.startsWith('/')) return ESCAPE;
        out.pop();
        queue.unshift(...target.split('/'));
      }
    }
    return out;
  }

  /** A new entry at `key` replaces what was there (GNU tar unlinks an existing symlink). */
  private replaced(key: string): void {
    if (this.links.delete(key)) {
      this.climbing.delete(key);
      this.recheckClimbing(key);
    }
    this.files.delete(key);
  }

  /** After the set of links changed, every link that climbs must still land inside. */
  private recheckClimbing(entry: string): void {
    for (const key of this.climbing) {
      const dir = key.split('/').slice(0, -1);
      const target = this.resolve([...dir, ...this.links.get(key)!.split('/')], true);
      if (target === ESCAPE || target === LOOP) {
        throw new ArchiveRefused(entry, `with it the symlink ${key} -> ${this.links.get(key)} points outside the archive`);
      }
    }
  }
}

function isZero(block: Buffer): boolean {
  for (let i = 0; i < BLOCK; i++) if (block[i] !== 0) return false;
  return true;
}

function roundUp(n: number): number {
  return Math.ceil(n / BLOCK) * BLOCK;
}

function cString(b: Buffer): string {
  const end = b.indexOf(0);
  return b.subarray(0, end === -1 ? b.length : end).toString('utf8');
}

function parseNumber(field: Buffer, what: string, name: string): number {
  if (field[0]! & 0x80) {
    // GNU base-256 for values too large for octal.
    if (field[0] === 0xff) throw new ArchiveRefused(name, `a negative ${what}`);
    let value = field[0]! & 0x7f;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i]!;
    if (!Number.isSafeInteger(value)) throw new ArchiveRefused(name, `a ${what} too large`);
    return value;
  }
  const text = cString(field).trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) throw new ArchiveRefused(name, `an invalid ${what} field`);
  return parseInt(text, 8);
}

function checksums(block: Buffer): {unsigned: number; signed: number} {
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const b = i >= 148 && i < 156 ? 0x20 : block[i]!;
    unsigned += b;
    signed += b > 127 ? b - 256 : b;
  }
  return {unsigned, signed};
}

export function parseHeader(block: Buffer): Header {
  const rawName = cString(block.subarray(0, 100));
  const stored = parseNumber(block.subarray(148, 156), 'checksum', rawName);
  const sums = checksums(block);
  if (stored !== sums.unsigned && stored !== sums.signed) throw new ArchiveRefused(rawName || '(header)', 'a corrupt tar header (bad checksum)');
  const magic = block.subarray(257, 263).toString('latin1');
  const posix = magic === 'ustar\0';
  if (!posix && magic !== 'ustar ') throw new ArchiveRefused(rawName, 'a header in an unknown tar format');
  const prefix = posix ? cString(block.subarray(345, 500)) : '';
  const name = prefix ? `${prefix}/${rawName}` : rawName;
  const typeByte = block[156]!;
  return {
    name,
    mode: parseNumber(block.subarray(100, 108), 'mode', name),
    size: parseNumber(block.subarray(124, 136), 'size', name),
    type: typeByte === 0 ? '\0' : String.fromCharCode(typeByte),
    linkname: cString(block.subarray(157, 257)),
  };
}

function rewriteMode(block: Buffer, mode: number): void {
  block.write(`${mode.toString(8).padStart(7, '0')}\0`, 100, 8, 'latin1');
  block.fill(0x20, 148, 156);
  const {unsigned} = checksums(block);
  block.write(`${unsigned.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
}

/** pax records: "<len> <key>=<value>\n", len counting the whole record. */
function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let offset = 0;
  while (offset < data.length) {
    if (data[offset] === 0) break;
    const space = data.indexOf(0x20, offset);
    if (space === -1) throw new ArchiveRefused('(pax header)', 'a malformed pax record');
    const len = Number(data.subarray(offset, space).toString('latin1'));
    if (!Number.isInteger(len) || len <= space - offset || offset + len > data.length) throw new ArchiveRefused('(pax header)', 'a malformed pax record');
    const record = data.subarray(space + 1, offset + len - 1).toString('utf8');
    const eq = record.indexOf('=');
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    offset += len;
  }
  return out;
}
