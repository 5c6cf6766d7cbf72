import {ElfError} from './errors.js';
import type {ElfFile} from './file.js';

/**
 * The dynamic string table (DT_STRTAB, DT_STRSZ — what ld.so uses, not the .dynstr section header).
 * Loaded whole only when symbols are wanted; otherwise each string is read on its own, in chunks.
 */
export class StringTable {
  private whole: Buffer | null = null;

  constructor(private readonly file: ElfFile, readonly offset: number, readonly size: number) {
    file.check(offset, size, 'dynamic string table (DT_STRTAB/DT_STRSZ)');
  }

  loadAll(): void {
    this.whole ??= this.file.read(this.offset, this.size, 'dynamic string table');
  }

  get(index: number, what: string): string {
    if (!Number.isSafeInteger(index) || index < 0 || index >= this.size) {
      throw new ElfError(this.file.path, 'malformed', `${what}: string offset ${index} is outside the string table (${this.size} bytes)`);
    }
    if (this.whole) return this.cstring(this.whole, index, what);
    return this.piecewise(index, what);
  }

  /** A string read on its own, in growing pieces (a method of its own: see ElfFile.read). */
  private piecewise(index: number, what: string): string {
    let chunk = 256;
    for (;;) {
      const len = Math.min(chunk, this.size - index);
      const buf = this.file.view(this.offset + index, len, `${what} string`);
      const nul = buf.indexOf(0);
      if (nul >= 0) return buf.toString('utf8', 0, nul);
      if (index + len >= this.size) break;
      chunk *= 4;
    }
    throw new ElfError(this.file.path, 'malformed', `${what}: string at offset ${index} is not NUL-terminated inside the string table`);
  }

  /** Synchronous access once loadAll() ran (symbol names: tens of thousands of them). */
  getLoaded(index: number, what: string): string {
    if (!this.whole) throw new Error('StringTable.loadAll() was not called');
    if (index >= this.size) {
      throw new ElfError(this.file.path, 'malformed', `${what}: string offset ${index} is outside the string table (${this.size} bytes)`);
    }
    return this.cstring(this.whole, index, what);
  }

  /** The loaded table itself (for hashing names without re-encoding them). */
  get loaded(): Buffer {
    if (!this.whole) throw new Error('StringTable.loadAll() was not called');
    return this.whole;
  }

  private cstring(buf: Buffer, index: number, what: string): string {
    const nul = buf.indexOf(0, index);
    if (nul < 0) throw new ElfError(this.file.path, 'malformed', `${what}: string at offset ${index} is not NUL-terminated inside the string table`);
    return buf.toString('utf8', index, nul);
  }
}
