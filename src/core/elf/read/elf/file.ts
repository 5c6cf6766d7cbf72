import {closeSync, constants, fstatSync, openSync, readSync} from 'node:fs';
import {isErrno} from '../../../errors.js';
import {ElfError} from './errors.js';
import {Fields} from './fields.js';

/**
 * Positioned reads over one open file. Nothing is read unless asked for, every request is
 * bounded by the file size, and small requests are served from aligned blocks kept only for
 * the lifetime of this object, so walking a verdef chain costs a few block reads.
 *
 * The first HEAD bytes come in one read, the first time anything there is asked for: the ELF
 * header, the program headers and the notes always lie there, and in most libraries the dynamic
 * symbols, their names, versions and hash table too (324 of the 473 objects of a CUDA and system
 * library directory). That buffer is reused by the next file opened (one buffer for a whole check,
 * not one per file and table: the garbage collector was a tenth of a first check's reading), so
 * what lies there is handed out in two ways: `view` and `fields` for what is parsed at once and
 * dropped, `read` (a copy) for what a parsed file keeps.
 *
 * Synchronous on purpose: a check reads about a thousand files of a few KB of tables each, from
 * the page cache. Measured on 985 libraries, the promise API's thread-pool round trip per
 * open/fstat/read/close cost more (0.23 s) than the reads themselves; pread(2) from the
 * main thread costs microseconds.
 */
const BLOCK = 4096;
/**
 * Big enough for the tables of most libraries; small enough that a header-only read of a 1 GB
 * library still costs kilobytes (test/core/elf/read/elf/large-file.test.ts).
 */
const HEAD = 16 * 1024;
/** No single table this reader needs legitimately exceeds this (libtorch_cuda's .dynstr is a few MB). */
export const MAX_TABLE_BYTES = 256 * 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/** The head buffer of the last file closed, for the next one (a file opened while another is open gets its own). */
let spareHead: Buffer | null = null;

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
  /** Bytes [0, min(size, HEAD)) of the file once asked for; shared with later files after close(). */
  private head: Buffer | null = null;
  private headFields: Fields | null = null;
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
    // Parsed results (a symbol lookup) may keep this object for its path: not its blocks.
    this.blocks = null;
    this.blockFields = null;
    this.headFields = null;
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
    this.blockFields = null;
  }

  /** `len` bytes at `off`, the caller's to keep; throws 'truncated' when they are not all in the file. */
  read(off: number, len: number, what: string): Buffer {
    this.check(off, len, what);
    if (len === 0) return Buffer.alloc(0);
    if (off + len <= HEAD) {
      const out = Buffer.allocUnsafeSlow(len);
      this.loadHead().copy(out, 0, off, off + len);
      return out;
    }
    return this.outside(off, len);
  }

  /**
   * `len` bytes at `off` for a look at once: valid until this file is closed (the head buffer then
   * serves the next file). Throws as `read` does.
   */
  view(off: number, len: number, what: string): Buffer {
    this.check(off, len, what);
    if (len === 0) return EMPTY;
    if (off + len <= HEAD) return this.loadHead().subarray(off, off + len);
    return this.outside(off, len);
  }

  /**
   * Fields over a buffer that holds [off, off + len), addressed by file offsets (Fields.origin):
   * for records parsed at once, valid until this file is closed. Throws as `read` does.
   */
  fields(off: number, len: number, what: string): Fields {
    this.check(off, len, what);
    if (off + len <= HEAD) return this.headFields ??= new Fields(this.loadHead(), this.littleEndian, this.is64, 0);
    const first = Math.floor(off / BLOCK);
    if (len <= BLOCK && Math.floor((off + len - 1) / BLOCK) === first) {
      const cached = this.blockFields;
      if (cached !== null && cached.origin === first * BLOCK) return cached;
      return this.blockFields = new Fields(this.block(first), this.littleEndian, this.is64, first * BLOCK);
    }
    return new Fields(this.readDirect(off, len), this.littleEndian, this.is64, off);
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
