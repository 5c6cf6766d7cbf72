import {ElfError} from './errors.js';
import {Fields} from './fields.js';
import type {ElfFile} from './file.js';
import type {ParsedHeader} from './header.js';

export interface SymbolCount {
  count: number;
  /** Which table ld.so would look symbols up in; 'none' means it can find no definition here. */
  table: 'gnu' | 'sysv' | 'none';
  /** GNU hash: symbols below this index are not in the table (undefined and local ones). */
  symoffset: number;
  /** GNU hash: file offset of the chain array (chain[i - symoffset] belongs to symbol i). */
  chainOff?: number;
  /** GNU hash: the bucket array (nbuckets words), for lookups by name. */
  buckets?: Fields;
  /** GNU hash: the Bloom filter (words of the class's size) and its second hash's shift, as do_lookup_x tests them first. */
  bloom?: {words: Fields; count: number; shift: number};
}

/** The GNU hash function (dl_new_hash) over a NUL-terminated name in `buf` at `start`. */
export function gnuHash(buf: Buffer, start: number): number {
  // h * 33 + c as a shift and an add, kept as an int32 (cheaper than Math.imul and >>> 0 per byte).
  let h = 5381;
  for (let i = start; i < buf.length && buf[i] !== 0; i++) h = ((h << 5) + h + buf[i]) | 0;
  return h >>> 0;
}

/** dl_new_hash of a name given as a string (its UTF-8 bytes, as they would stand in a string table). */
export function gnuHashOf(name: string): number {
  let h = 5381;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 0x80) return gnuHash(Buffer.from(`${name}\0`, 'utf8'), 0);
    h = ((h << 5) + h + c) | 0;
  }
  return h >>> 0;
}

/** The dynamic symbol count from DT_GNU_HASH (elf-loader-spec §4.6): max bucket, then walk its chain to the end bit. */
export function countFromGnuHash(file: ElfFile, h: ParsedHeader, off: number): SymbolCount {
  const f = file.fields(off, 16, 'GNU hash header');
  const nbuckets = f.u32(off);
  const symoffset = f.u32(off + 4);
  const bloomSize = f.u32(off + 8);
  const bloomShift = f.u32(off + 12);
  const bloomBytes = bloomSize * (h.is64 ? 8 : 4);
  const bucketsOff = off + 16 + bloomBytes;
  file.check(bucketsOff, nbuckets * 4, 'GNU hash buckets');
  const chainOff = bucketsOff + nbuckets * 4;
  // Kept: lookups by name test the filter, then start at a bucket.
  const buckets = new Fields(file.read(bucketsOff, nbuckets * 4, 'GNU hash buckets'), h.littleEndian, h.is64);
  // A table without a filter (never made by a linker) is looked up without one.
  const bloom = bloomSize === 0 ? undefined : {words: new Fields(file.read(off + 16, bloomBytes, 'GNU hash Bloom filter'), h.littleEndian, h.is64), count: bloomSize, shift: bloomShift};
  const max = maxWord(buckets, nbuckets);
  if (max < symoffset) return {count: symoffset, table: 'gnu', symoffset, chainOff, buckets, bloom};
  // Walk the last chain to its terminator (bit 0 set). The chain array is bounded by the end of the
  // file: a chain without a terminator is malformed, never an endless loop. Usually a word or
  // two, read where they lie (the head, a cached block).
  for (let i = max; ; i++) {
    const wordOff = chainOff + (i - symoffset) * 4;
    if (wordOff + 4 > file.size) {
      throw new ElfError(file.path, 'malformed', `GNU hash chain starting at symbol ${max} has no end marker before the end of the file`);
    }
    if (file.fields(wordOff, 4, 'GNU hash chain').u32(wordOff) & 1) return {count: i + 1, table: 'gnu', symoffset, chainOff, buckets, bloom};
  }
}

/** The largest of the first n 32-bit words (a small loop of its own: it runs over every bucket of every library). */
function maxWord(words: Fields, n: number): number {
  let max = 0;
  for (let i = 0; i < n; i++) {
    const w = words.u32(i * 4);
    if (w > max) max = w;
  }
  return max;
}

/** DT_HASH: nchain is the number of symbols. */
export function countFromSysvHash(file: ElfFile, h: ParsedHeader, off: number): SymbolCount {
  // Elf_Symndx is 64-bit on 64-bit s390 and Alpha (glibc bits/elfclass.h), 32-bit everywhere else.
  const wide = h.is64 && (h.machine === 22 || h.machine === 0x9026);
  const size = wide ? 8 : 4;
  const f = file.fields(off, 2 * size, 'SysV hash header (DT_HASH)');
  const nbucket = wide ? f.u64(off) : f.u32(off);
  const nchain = wide ? f.u64(off + 8) : f.u32(off + 4);
  file.check(off + 2 * size, (nbucket + nchain) * size, 'SysV hash table (DT_HASH)');
  return {count: nchain, table: 'sysv', symoffset: 0};
}

const SHT_DYNSYM = 11;

/** Without a hash table the loader sees no symbols; the section headers still give the count for the report. */
export function countFromSections(file: ElfFile, h: ParsedHeader): SymbolCount {
  const none: SymbolCount = {count: 0, table: 'none', symoffset: 0};
  if (h.shnum === 0 || h.shoff === 0) return none;
  const expected = h.is64 ? 64 : 40;
  if (h.shentsize !== expected) return none;
  const f = file.fields(h.shoff, h.shnum * h.shentsize, 'section header table');
  for (let i = 0; i < h.shnum; i++) {
    const b = h.shoff + i * h.shentsize;
    if (f.u32(b + 4) !== SHT_DYNSYM) continue;
    const size = h.is64 ? f.u64(b + 32) : f.u32(b + 20);
    const entsize = h.is64 ? f.u64(b + 56) : f.u32(b + 36);
    if (!entsize) return none;
    return {count: Math.floor(size / entsize), table: 'none', symoffset: 0};
  }
  return none;
}
