import {closeSync, constants, fstatSync, openSync, readSync} from 'node:fs';
import {isErrno} from '../../../errors.js';
import {ElfError} from './errors.js';

/**
 * Positioned reads over one open file. Nothing is read unless asked for, every request is
 * bounded by the file size, and small requests are served from aligned blocks kept only for
 * the lifetime of this object, so walking a verdef chain costs a few block reads.
 *
 * Synchronous on purpose: a check reads about a thousand files of a few KB of tables each, from
 * the page cache. Measured on 985 libraries, the promise API's thread-pool round trip per
 * open/fstat/read/close cost more (0.23 s) than the reads themselves; pread(2) from the
 * main thread costs microseconds.
 */
const BLOCK = 4096;
/** No single table this reader needs legitimately exceeds this (libtorch_cuda's .dynstr is a few MB). */
export const MAX_TABLE_BYTES = 256 * 1024 * 1024;

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
  private readonly blocks = new Map<number, Buffer>();
  private closed = false;

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
    this.blocks.clear();
    try {
      closeSync(this.fd);
    } catch {
      // a failed close of a read-only descriptor loses nothing
    }
  }

  /** `len` bytes at `off`; throws 'truncated' when they are not all in the file. */
  read(off: number, len: number, what: string): Buffer {
    this.check(off, len, what);
    if (len === 0) return Buffer.alloc(0);
    const first = Math.floor(off / BLOCK);
    if (len <= BLOCK && Math.floor((off + len - 1) / BLOCK) === first) {
      const block = this.block(first);
      return block.subarray(off - first * BLOCK, off - first * BLOCK + len);
    }
    return this.readDirect(off, len);
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

  private block(index: number): Buffer {
    let block = this.blocks.get(index);
    if (!block) {
      const start = index * BLOCK;
      block = this.readDirect(start, Math.min(BLOCK, this.size - start));
      this.blocks.set(index, block);
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
