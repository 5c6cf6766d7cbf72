/**
 * Endian-aware field access over a buffer. 64-bit values come back as numbers; a value above
 * 2^53 becomes NaN, which every bounds check rejects (no real file offset or size is that big).
 *
 * `origin` is the file offset of the buffer's first byte, and every accessor takes an offset in
 * the same frame: ElfFile.fields hands out one object over its first bytes (or one cached block)
 * for every record that lies there, so walking headers, the dynamic array or a verneed chain
 * allocates nothing per record (a Fields and its DataView per record were a tenth of a first
 * check's reading).
 */
export class Fields {
  private readonly view: DataView;

  constructor(readonly buf: Buffer, readonly littleEndian: boolean, readonly is64: boolean, readonly origin = 0) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  u8(off: number): number {
    return this.view.getUint8(off - this.origin);
  }

  u16(off: number): number {
    return this.view.getUint16(off - this.origin, this.littleEndian);
  }

  u32(off: number): number {
    return this.view.getUint32(off - this.origin, this.littleEndian);
  }

  i32(off: number): number {
    return this.view.getInt32(off - this.origin, this.littleEndian);
  }

  u64(off: number): number {
    // Two 32-bit halves, not getBigUint64: a BigInt per field was a measurable part of reading
    // 650k symbols. The high half below 2^21 is exactly "at most Number.MAX_SAFE_INTEGER".
    const at = off - this.origin;
    const lo = this.view.getUint32(at + (this.littleEndian ? 0 : 4), this.littleEndian);
    const hi = this.view.getUint32(at + (this.littleEndian ? 4 : 0), this.littleEndian);
    return hi >= 0x200000 ? Number.NaN : hi * 0x100000000 + lo;
  }

  i64(off: number): number {
    // As u64: a signed high half in [-2^21, 2^21) is the safe range, except -2^53 itself.
    const at = off - this.origin;
    const lo = this.view.getUint32(at + (this.littleEndian ? 0 : 4), this.littleEndian);
    const hi = this.view.getInt32(at + (this.littleEndian ? 4 : 0), this.littleEndian);
    if (hi >= 0x200000 || hi < -0x200000 || (hi === -0x200000 && lo === 0)) return Number.NaN;
    return hi * 0x100000000 + lo;
  }

  /** An address/offset-sized word: 8 bytes in ELF64, 4 in ELF32. */
  word(off: number): number {
    return this.is64 ? this.u64(off) : this.u32(off);
  }

  /** A signed word (d_tag). */
  sword(off: number): number {
    return this.is64 ? this.i64(off) : this.i32(off);
  }

  /** The low 32 bits of a word, for flag fields whose upper half is unused. */
  lowWord(off: number): number {
    return this.is64 ? this.u32(off + (this.littleEndian ? 0 : 4)) : this.u32(off);
  }
}
