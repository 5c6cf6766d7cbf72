import {closeSync, constants, fstatSync, openSync, readSync} from 'node:fs';
import {isErrno} from '../../../errors.js';
import {ElfError} from './errors.js';
import {Fields} from './fields.js';

/**
 * Positioned reads over one open file. Nothing is read unless asked for, every request is
 * bounded by the file size, and small requests are served from aligned blocks kept only for
 * the lifetime of this object, so walking a verdef chain costs a few block reads.
 *
 * Bytes cost more than reads here: a pread(2) from the page cache costs about 1.5 us plus 0.65 ns
 * a byte on the 2-core machine of the benchmarks (a 4 KB block 4 us, 16 KB 12 us). So a file is
 * read in few pieces of about the size needed:
 * - its first HEAD bytes (the ELF header, the program headers and the notes in 467 of 473
 *   libraries), into a buffer the next file reuses: `view` and `fields` hand out what is parsed at
 *   once and dropped, `read` copies what a parsed file keeps;
 * - a span the caller plans (`preload`: the dynamic tables, which lie together), into a buffer of
 *   this file's own that what the file keeps is sliced from, without copies;
 * - anything else from 4 KB blocks, or on its own when it is larger or asked for `exact`.
 * One object and one DataView serve every record of a buffer (Fields.origin): a Fields, a buffer
 * and a DataView per record were a tenth of a first check's reading.
 *
 * Synchronous on purpose: a check reads about a thousand files of a few KB of tables each, from
 * the page cache. Measured on 985 libraries, the promise API's thread-pool round trip per
 * open/fstat/read/close cost more (0.23 s) than the reads themselves; pread(2) from the
 * main thread costs microseconds.
 */
const BLOCK = 4096;
const HEAD = 1024;
/** No single table this reader needs legitimately exceeds this (libtorch_cuda's .dynstr is a few MB). */
export const MAX_TABLE_BYTES = 256 * 1024 * 1024;
const EMPTY: Buffer = Buffer.alloc(0);

/** The head buffer of the last file closed, for the next one (a file opened while another is open gets its own). */
let spareHead: Buffer | null = null;

/**
 * What a parsed file keeps of its head is copied into shared slabs: one allocation for many files
 * instead of one per table. Only kept tables go there, and a check keeps every file it parses, so
 * a slab holds no garbage alive.
 */
const SLAB = 16 * 1024;
let slab: Buffer = EMPTY;
let slabUsed = 0;

function keepCopy(head: Buffer, off: number, len: number): Buffer {
  if (slabUsed + len > slab.length) {
    slab = Buffer.allocUnsafeSlow(SLAB);
    slabUsed = 0;
  }
  const at = slabUsed;
  slab.set(new Uint8Array(head.buffer, head.byteOffset + off, len), at);
  // 8-aligned, as the tables are in the file.
  slabUsed = (at + len + 7) & ~7;
  return slab.subarray(at, at + len);
}

/** Process-wide counters of bytes read, so tests and benchmarks can prove reads stay small. */
const stats = {reads: 0, bytes: 0};
export function readStats(): {reads: number; bytes: number} {
  return {...stats};
}
export function resetReadStats(): void {
  stats.reads = 0;
  stats.bytes = 0;
}

export class ElfFile {
  private blocks: Map<number, Buffer> | null = null;
  private closed = false;
  /** Bytes [0, min(size, HEAD)) of the file once asked for; handed to the next file at close(). */
  private head: Buffer | null = null;
  private headFields: Fields | null = null;
  /** Bytes [spanStart, spanStart + span.length) once preloaded: this file's own. */
  private span: Buffer = EMPTY;
  private spanStart = 0;
  private spanFields: Fields | null = null;
  /** The block `fields` last served from (a chain walk outside the head stays in one block). */
  private blockFields: Fields | null = null;
  private littleEndian = true;
  private is64 = true;

  private constructor(readonly path: string, private readonly fd: number, readonly size: number) {}

  static open(path: string): ElfFile {
    let fd: number;
    try {
      // O_NONBLOCK: opening a FIFO named like a library must not wait for a writer (it is rejected
      // below as not a regular file); for regular files the flag changes nothing.
      fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (error) {
      throw ioError(path, error);
    }
    try {
      const st = fstatSync(fd);
      if (st.isDirectory()) throw new ElfError(path, 'io', 'is a directory, not an ELF file', {errno: 'EISDIR'});
      if (!st.isFile()) throw new ElfError(path, 'io', 'is not a regular file', {errno: 'EINVAL'});
      return new ElfFile(path, fd, st.size);
    } catch (error) {
      try {
        closeSync(fd);
      } catch {
        // nothing more to do
      }
      throw error instanceof ElfError ? error : ioError(path, error);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    // Parsed results (a symbol lookup) may keep this object for its path: not its buffers (what
    // they keep of the span, they hold themselves).
    this.blocks = null;
    this.blockFields = null;
    this.headFields = null;
    this.span = EMPTY;
    this.spanFields = null;
    if (this.head) spareHead = this.head;
    this.head = null;
    try {
      closeSync(this.fd);
    } catch {
      // a failed close of a read-only descriptor loses nothing
    }
  }

  /** The byte order and class `fields` reads with (parseHeader sets them from e_ident). */
  format(littleEndian: boolean, is64: boolean): void {
    this.littleEndian = littleEndian;
    this.is64 = is64;
    this.headFields = null;
    this.spanFields = null;
    this.blockFields = null;
  }

  /**
   * Reads [off, off + len) in one piece, for the reads of this file that fall inside it: a plan,
   * not a request (nothing is checked or thrown; a range outside the file is ignored, and so is a
   * failed read: each request then reads and fails on its own, as without the plan).
   */
  preload(off: number, len: number): void {
    if (!(off >= 0 && len > 0 && off + len <= this.size && len <= MAX_TABLE_BYTES) || this.closed) return;
    try {
      this.span = this.readDirect(off, len);
      this.spanStart = off;
      this.spanFields = null;
    } catch {
      this.span = EMPTY;
    }
  }

  /** Whether [off, off + len) lies in the preloaded span (reading it costs no read). */
  preloaded(off: number, len: number): boolean {
    return this.span.length > 0 && this.inSpan(off, len);
  }

  // read, view and fields are called for every record and table: each serves the head and the span
  // in a few lines and leaves the rest to a method of its own, so that the walkers the compiler
  // optimizes (a verneed chain, the dynamic array) take in only these lines, not the reads.

  /** `len` bytes at `off`, the caller's to keep; throws 'truncated' when they are not all in the file. */
  read(off: number, len: number, what: string): Buffer {
    this.check(off, len, what);
    if (len === 0) return Buffer.alloc(0);
    if (off + len <= HEAD) return keepCopy(this.head ?? this.loadHead(), off, len);
    if (this.inSpan(off, len)) return this.span.subarray(off - this.spanStart, off - this.spanStart + len);
    return this.outside(off, len);
  }

  /**
   * `len` bytes at `off` for a look at once: valid until this file is closed (the head buffer then
   * serves the next file). Throws as `read` does.
   */
  view(off: number, len: number, what: string): Buffer {
    this.check(off, len, what);
    if (len === 0) return EMPTY;
    if (off + len <= HEAD) return (this.head ?? this.loadHead()).subarray(off, off + len);
    if (this.inSpan(off, len)) return this.span.subarray(off - this.spanStart, off - this.spanStart + len);
    return this.outside(off, len);
  }

  /**
   * Fields over a buffer that holds [off, off + len), addressed by file offsets (Fields.origin):
   * for records parsed at once, valid until this file is closed. `exact`: a range read once
   * (the dynamic array) is read alone rather than with the rest of its block. Throws as `read` does.
   */
  fields(off: number, len: number, what: string, exact = false): Fields {
    this.check(off, len, what);
    if (off + len <= HEAD) return this.headFields ?? this.newHeadFields();
    if (this.inSpan(off, len)) return this.spanFields ?? this.newSpanFields();
    return this.fieldsOutside(off, len, exact);
  }

  /**
   * `len` bytes at `off` into `into` (from its start), for scans that look at a range once and
   * keep nothing: no new memory per piece (a fresh 4 MB buffer per piece cost page faults, 8x the
   * read itself, on libLLVM's 35 MB of .rodata). The bytes are valid until the next scan into
   * the same buffer.
   */
  scan(off: number, len: number, into: Buffer, what: string): Buffer {
    this.check(off, len, what);
    if (len > into.length) throw new RangeError(`scan of ${len} bytes into a buffer of ${into.length}`);
    this.readInto(into, off, len);
    return into.subarray(0, len);
  }

  /** Throws unless [off, off+len) lies inside the file. */
  check(off: number, len: number, what: string): void {
    if (!Number.isSafeInteger(off) || !Number.isSafeInteger(len) || off < 0 || len < 0) {
      throw new ElfError(this.path, 'malformed', `${what}: impossible offset ${off} or size ${len}`);
    }
    if (len > MAX_TABLE_BYTES) {
      throw new ElfError(this.path, 'malformed', `${what}: absurd size ${len} bytes`);
    }
    if (off + len > this.size) {
      throw new ElfError(this.path, 'truncated',
        `${what} (offset ${off}, ${len} bytes) lies past the end of the file (${this.size} bytes)`);
    }
  }

  private newHeadFields(): Fields {
    return this.headFields = new Fields(this.loadHead(), this.littleEndian, this.is64, 0);
  }

  private newSpanFields(): Fields {
    return this.spanFields = new Fields(this.span, this.littleEndian, this.is64, this.spanStart);
  }

  private fieldsOutside(off: number, len: number, exact: boolean): Fields {
    const first = Math.floor(off / BLOCK);
    if (!exact && len <= BLOCK && Math.floor((off + len - 1) / BLOCK) === first) {
      const cached = this.blockFields;
      if (cached !== null && cached.origin === first * BLOCK) return cached;
      return this.blockFields = new Fields(this.block(first), this.littleEndian, this.is64, first * BLOCK);
    }
    return new Fields(this.readDirect(off, len), this.littleEndian, this.is64, off);
  }

  private inSpan(off: number, len: number): boolean {
    return off >= this.spanStart && off + len <= this.spanStart + this.span.length;
  }

  /** The head, read on first need (only bytes below the file size are ever handed out: check()). */
  private loadHead(): Buffer {
    let head = this.head;
    if (head === null) {
      head = spareHead ?? Buffer.allocUnsafeSlow(HEAD);
      spareHead = null;
      // Kept before the read: a failed read still hands the buffer back at close().
      this.head = head;
      this.readInto(head, 0, Math.min(this.size, HEAD));
    }
    return head;
  }

  /** Bytes past the head: from a cached block when they lie in one, else read on their own. */
  private outside(off: number, len: number): Buffer {
    const first = Math.floor(off / BLOCK);
    if (len <= BLOCK && Math.floor((off + len - 1) / BLOCK) === first) {
      const block = this.block(first);
      return block.subarray(off - first * BLOCK, off - first * BLOCK + len);
    }
    return this.readDirect(off, len);
  }

  private block(index: number): Buffer {
    const blocks = this.blocks ??= new Map();
    let block = blocks.get(index);
    if (!block) {
      const start = index * BLOCK;
      block = this.readDirect(start, Math.min(BLOCK, this.size - start));
      blocks.set(index, block);
    }
    return block;
  }

  private readDirect(off: number, len: number): Buffer {
    // Never from the shared pool: tables are kept as long as the parsed file is cached, and a
    // pool slice would keep its whole 8 KB slab alive with it.
    const buf = Buffer.allocUnsafeSlow(len);
    this.readInto(buf, off, len);
    return buf;
  }

  /** `len` bytes at `off` into the start of `buf`, all of them or an error. */
  private readInto(buf: Buffer, off: number, len: number): void {
    let done = 0;
    try {
      while (done < len) {
        const bytesRead = readSync(this.fd, buf, done, len - done, off + done);
        if (bytesRead === 0) break;
        done += bytesRead;
      }
    } catch (error) {
      throw ioError(this.path, error);
    }
    stats.reads++;
    stats.bytes += done;
    // The file shrank under us (or a special file lied about its size).
    if (done < len) throw new ElfError(this.path, 'truncated', `could read only ${done} of ${len} bytes at offset ${off}`);
  }
}

function ioError(path: string, error: unknown): ElfError {
  if (isErrno(error)) {
    const detail = error.code === 'ENOENT' ? 'no such file'
      : error.code === 'EISDIR' ? 'is a directory, not an ELF file'
      : error.code === 'EACCES' ? 'permission denied'
      : `cannot read (${error.code})`;
    return new ElfError(path, 'io', detail, {errno: error.code, cause: error});
  }
  return new ElfError(path, 'io', `cannot read: ${error instanceof Error ? error.message : String(error)}`, {cause: error});
}
