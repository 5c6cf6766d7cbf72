import type {ElfSymbol, SymbolLookup} from './types.js';
import {ElfError} from './errors.js';
import {Fields} from './fields.js';
import type {ElfFile} from './file.js';
import type {ParsedHeader} from './header.js';
import type {StringTable} from './strings.js';
import {gnuHash, gnuHashOf} from './hash.js';

export interface SymbolTables {
  symtabOff: number;
  entsize: number;
  count: number;
  /** File offset of DT_VERSYM, or null. */
  versymOff: number | null;
  /** GNU hash symoffset: lower indexes are not in the hash table. */
  hashedFrom: number;
  hashed: boolean;
  /** GNU hash chain array offset: every hashed symbol's name is verified against it. */
  gnuChainOff?: number;
  /** GNU hash bucket array (set with gnuChainOff). */
  gnuBuckets?: Fields;
  /** GNU hash Bloom filter (hash.ts SymbolCount.bloom). */
  gnuBloom?: {words: Fields; count: number; shift: number};
}

type VersionTable = Map<number, {name: string; file: string | null}>;

/** The dynamic symbols 1..count-1 with their `.gnu.version` data (elf-loader-spec §3.1, §4.5). */
export function readSymbols(
  file: ElfFile, h: ParsedHeader, t: SymbolTables, strings: StringTable, versions: VersionTable, relocated: Uint32Array | null = null,
): ElfSymbol[] {
  if (t.count <= 1) return [];
  const table = new DynamicSymbols(file, h, t, strings, versions);
  const out: ElfSymbol[] = [];
  for (let i = 1; i < t.count; i++) {
    table.validate(i);
    const s = table.symbol(i);
    if (relocated && !s.defined && relocated[i] === 0) s.unreferenced = true;
    out.push(s);
  }
  return out;
}

/**
 * The undefined dynamic symbols only (what the object references), in table order, each carrying
 * the GNU hash of its name, and a lookup that answers "which symbols named N can ld.so find here"
 * from the raw tables, the way do_lookup_x does. Every symbol is validated as readSymbols does (same
 * errors, same order) but for one check: a GNU hash chain word that does not match its symbol's
 * name. readSymbols must reject that (its index would find a symbol ld.so cannot reach); here the
 * lookup walks the chain as do_lookup_x does and, like ld.so, does not find that symbol, so the
 * verdict holds without hashing the 30 MB of names of a library directory's definitions (issue 43:
 * 5% of a first check). The defined ones (84% of the 650k symbols) never become objects or strings
 * unless a lookup hits them.
 */
export function readUndefinedSymbols(
  file: ElfFile, h: ParsedHeader, t: SymbolTables, strings: StringTable, versions: VersionTable, relocated: Uint32Array | null = null,
): {symbols: ElfSymbol[]; lookup: SymbolLookup} {
  if (t.count <= 1) return {symbols: [], lookup: NO_LOOKUP};
  const table = new DynamicSymbols(file, h, t, strings, versions);
  const symbols: ElfSymbol[] = [];
  if (h.littleEndian && h.is64 && table.terminated) {
    undefinedSymbolsLE64(table, t, versions, relocated, symbols);
    return {symbols, lookup: table};
  }
  for (let i = 1; i < t.count; i++) {
    table.validate(i, false);
    if (table.shndx(i) !== 0) continue;
    const s = table.symbol(i, undefined, gnuHash(table.names, table.nameOffset(i)));
    if (relocated && relocated[i] === 0) s.unreferenced = true;
    symbols.push(s);
  }
  return {symbols, lookup: table};
}

/**
 * readUndefinedSymbols' loop for ELF64 little-endian with a NUL-terminated string table (every
 * x86-64 and aarch64 library): the same checks as DynamicSymbols.validate(i, false), on the raw
 * bytes in one loop with the GNU hash of each undefined name computed inline. A first check runs this once per file, over
 * ~650k symbols and 30 MB of names: method calls, DataView reads and a Map probe per symbol were
 * most of its reading. Any check that fails hands the symbol to validate(), which throws its own
 * error (the same text and order as readSymbols).
 */
function undefinedSymbolsLE64(
  table: DynamicSymbols, t: SymbolTables, versions: VersionTable, relocated: Uint32Array | null, out: ElfSymbol[],
): void {
  const syms = table.symbolBytes;
  const names = table.names;
  const size = table.strtabSize;
  const entsize = t.entsize;
  const count = t.count;
  const versym = table.versymBytes;
  // The version indexes the tables define, as flags (versions.has per symbol cost a Map probe).
  let known = new Uint8Array(0);
  if (versym) {
    let max = 0;
    for (const k of versions.keys()) if (k > max) max = k;
    known = new Uint8Array(max + 1);
    for (const k of versions.keys()) known[k] = 1;
  }
  for (let i = 1; i < count; i++) {
    const b = i * entsize;
    const nameOff = (syms[b] | (syms[b + 1] << 8) | (syms[b + 2] << 16) | (syms[b + 3] << 24)) >>> 0;
    if (nameOff >= size) table.validate(i, false);
    if (versym) {
      const index = (versym[i * 2] | (versym[i * 2 + 1] << 8)) & 0x7fff;
      if (index >= 2 && (index >= known.length || known[index] === 0)) table.validate(i, false);
    }
    if (syms[b + 6] !== 0 || syms[b + 7] !== 0) continue;
    // dl_new_hash (h * 33 + c, as shift and add: cheaper than Math.imul here), kept as an int32.
    // The table ends with a NUL, so every name ends inside it.
    let hash = 5381;
    let bits = 0;
    let k = nameOff;
    for (let c = names[k]; c !== 0; c = names[++k]) {
      hash = ((hash << 5) + hash + c) | 0;
      bits |= c;
    }
    // ASCII (nearly every name): the same string without UTF-8 decoding.
    const name = bits < 0x80 ? names.toString('latin1', nameOff, k) : names.toString('utf8', nameOff, k);
    const s = table.symbol(i, name, hash >>> 0);
    if (relocated && relocated[i] === 0) s.unreferenced = true;
    out.push(s);
  }
}

const NONE: readonly ElfSymbol[] = Object.freeze([]);
export const NO_LOOKUP: SymbolLookup = {find: () => NONE};

/** Raw views of .dynsym, .gnu.version, .dynstr and the hash table of one object. */
class DynamicSymbols implements SymbolLookup {
  private readonly syms: Fields;
  private readonly versym: Fields | null;
  private readonly chain: Fields | null;
  readonly strtabSize: number;
  /** Every name offset below the string table size ends at a NUL: the table's last byte is one. */
  readonly terminated: boolean;
  private readonly o: {info: number; other: number; shndx: number; value: number};
  /** SysV hash only: indexes by name, built on the first lookup. */
  private byName: Map<string, number[]> | null = null;
  private readonly made = new Map<number, ElfSymbol>();
  private readonly lists = new Map<number, readonly ElfSymbol[]>();
  readonly names: Buffer;

  constructor(
    private readonly file: ElfFile, private readonly h: ParsedHeader, private readonly t: SymbolTables,
    strings: StringTable, private readonly versions: VersionTable,
  ) {
    this.syms = new Fields(file.read(t.symtabOff, t.count * t.entsize, 'dynamic symbol table (DT_SYMTAB)'), h.littleEndian, h.is64);
    this.versym = t.versymOff === null ? null
      : new Fields(file.read(t.versymOff, t.count * 2, 'symbol version table (DT_VERSYM)'), h.littleEndian, h.is64);
    strings.loadAll();
    this.names = strings.loaded;
    this.strtabSize = strings.size;
    this.terminated = this.names.length > 0 && this.names[this.names.length - 1] === 0;
    this.chain = t.gnuChainOff === undefined || t.count <= t.hashedFrom ? null
      : new Fields(file.read(t.gnuChainOff, (t.count - t.hashedFrom) * 4, 'GNU hash chain'), h.littleEndian, h.is64);
    this.o = h.is64 ? {info: 4, other: 5, shndx: 6, value: 8} : {info: 12, other: 13, shndx: 14, value: 4};
  }

  /** The raw .dynsym and .gnu.version (null: none) bytes. */
  get symbolBytes(): Buffer {
    return this.syms.buf;
  }

  get versymBytes(): Buffer | null {
    return this.versym?.buf ?? null;
  }


  nameOffset(i: number): number {
    return this.syms.u32(i * this.t.entsize);
  }

  shndx(i: number): number {
    return this.syms.u16(i * this.t.entsize + this.o.shndx);
  }

  /**
   * The checks readSymbols always made, in its order: name in the table, hash chain word (unless
   * `chainWord` is false: see readUndefinedSymbols), version index.
   */
  validate(i: number, chainWord = true): void {
    const nameOff = this.nameOffset(i);
    if (nameOff >= this.strtabSize || (!this.terminated && this.names.indexOf(0, nameOff) < 0)) {
      const what = `name of dynamic symbol ${i} of ${this.t.count} (the count the hash table gives)`;
      throw new ElfError(this.file.path, 'malformed', nameOff >= this.strtabSize
        ? `${what}: string offset ${nameOff} is outside the string table (${this.strtabSize} bytes)`
        : `${what}: string at offset ${nameOff} is not NUL-terminated inside the string table`);
    }
    // A chain word that does not match the name's hash means a corrupt table (ld.so would not find
    // the symbol, or would walk into garbage): reject the file rather than report made-up symbols.
    if (chainWord && this.chain && i >= this.t.hashedFrom && ((this.chain.u32((i - this.t.hashedFrom) * 4) | 1) !== (gnuHash(this.names, nameOff) | 1))) {
      throw new ElfError(this.file.path, 'malformed', `the GNU hash table does not match dynamic symbol ${i} (corrupt DT_GNU_HASH)`);
    }
    if (this.versym) {
      const index = this.versym.u16(i * 2) & 0x7fff;
      if (index >= 2 && !this.versions.has(index)) {
        throw new ElfError(this.file.path, 'malformed', `dynamic symbol ${i} uses version index ${index}, which no verdef or verneed entry defines`);
      }
    }
  }

  /** Symbol i as an object (validate(i) passed), with `nameHash` when given. */
  symbol(i: number, knownName?: string, nameHash?: number): ElfSymbol {
    const b = i * this.t.entsize;
    const syms = this.syms;
    const nameOff = syms.u32(b);
    const name = knownName ?? this.names.toString('utf8', nameOff, this.names.indexOf(0, nameOff));
    const info = syms.u8(b + this.o.info);
    const other = syms.u8(b + this.o.other);
    const shndx = syms.u16(b + this.o.shndx);
    const value = this.h.is64 ? syms.u64(b + this.o.value) : syms.u32(b + this.o.value);
    const raw = this.versym ? this.versym.u16(i * 2) : 0;
    const index = raw & 0x7fff;
    let version: string | null = null;
    let versionFile: string | null = null;
    if (this.versym && index >= 2) {
      const entry = this.versions.get(index)!;
      version = entry.name;
      versionFile = entry.file;
    }
    // NaN only for values above 2^53; what matters to the loader model is zero vs nonzero.
    const clamped = Number.isNaN(value) ? Number.MAX_SAFE_INTEGER : value;
    const hashed = this.t.hashed && i >= this.t.hashedFrom;
    const hidden = (raw & 0x8000) !== 0;
    // Two literals rather than a property added later: one object shape each, no extra backing store.
    return nameHash === undefined
      ? {name, defined: shndx !== 0, binding: info >> 4, type: info & 0xf, visibility: other & 3, version, versionFile, hidden, versionIndex: index, shndx, value: clamped, hashed}
      : {name, defined: shndx !== 0, binding: info >> 4, type: info & 0xf, visibility: other & 3, version, versionFile, hidden, versionIndex: index, shndx, value: clamped, hashed, nameHash};
  }

  /**
   * The symbols named `name` the hash table leads to (do_lookup_x before check_match): for
   * DT_GNU_HASH the bucket of the name's hash and its chain, for DT_HASH every symbol of that name.
   * Not memoised by name: a walk of one short chain, comparing hash words and then the bytes of
   * one name, costs less than hashing the name's string into a map (a first check asks 100k
   * names, most of them once per library; issue 43). The symbols found are made once (cached).
   */
  find(name: string, nameHash?: number): readonly ElfSymbol[] {
    return this.lookUp(name, nameHash);
  }

  private lookUp(name: string, nameHash?: number): readonly ElfSymbol[] {
    if (!this.t.hashed) return NONE;
    if (!this.chain || !this.t.gnuBuckets) return this.t.gnuChainOff === undefined ? this.findSysv(name) : NONE;
    const nbuckets = this.t.gnuBuckets.buf.length / 4;
    if (nbuckets === 0) return NONE;
    const hash = nameHash ?? gnuHashOf(name);
    // do_lookup_x tests the Bloom filter first: most names asked of a library it does not define
    // stop here, without a bucket or chain read (a third of a first check's 71k lookups).
    if (this.t.gnuBloom && !this.mayDefine(this.t.gnuBloom, hash)) return NONE;
    const first = this.t.gnuBuckets.u32((hash % nbuckets) * 4);
    // 0 is an empty bucket; an index below symoffset or past the table is a corrupt one.
    if (first < this.t.hashedFrom || first >= this.t.count) return NONE;
    // Nearly every name has one symbol: its answer is that symbol's own one-element list, made
    // once, so that 100k lookups allocate nothing (an array each was 8 MB of garbage).
    let one = -1;
    let out: ElfSymbol[] | null = null;
    for (let i = first; i < this.t.count; i++) {
      const word = this.chain.u32((i - this.t.hashedFrom) * 4);
      if (((word ^ hash) >>> 1) === 0 && this.nameIs(this.nameOffset(i), name)) {
        if (one < 0) one = i;
        else (out ??= [this.cached(one, name)]).push(this.cached(i, name));
      }
      if (word & 1) break;
    }
    return out ?? (one < 0 ? NONE : this.alone(one, name));
  }

  /** dl-lookup.c's filter test: both bits of the name's hash set in its word (indexed with the mask ld.so uses). */
  private mayDefine(bloom: {words: Fields; count: number; shift: number}, hash: number): boolean {
    const bits = this.h.is64 ? 64 : 32;
    const at = (Math.floor(hash / bits) & (bloom.count - 1)) * (bits / 8);
    return this.bitSet(bloom.words, at, hash % bits) && this.bitSet(bloom.words, at, (hash >>> (bloom.shift & 31)) % bits);
  }

  private bitSet(words: Fields, at: number, bit: number): boolean {
    if (bit < 32) return ((words.u32(at + (this.h.is64 && !this.h.littleEndian ? 4 : 0)) >>> bit) & 1) === 1;
    return ((words.u32(at + (this.h.littleEndian ? 4 : 0)) >>> (bit - 32)) & 1) === 1;
  }

  /** [symbol i], made once. */
  private alone(i: number, name: string): readonly ElfSymbol[] {
    let list = this.lists.get(i);
    if (!list) this.lists.set(i, list = [this.cached(i, name)]);
    return list;
  }

  /** Is the string at `off` exactly `name`? Compared in place: no string is made for the table's side. */
  private nameIs(off: number, name: string): boolean {
    const names = this.names;
    const n = name.length;
    if (off + n >= names.length) return this.names.toString('utf8', off, this.names.indexOf(0, off)) === name;
    for (let k = 0; k < n; k++) {
      const c = name.charCodeAt(k);
      // Beyond ASCII the UTF-8 bytes differ from the UTF-16 units: compare decoded.
      if (c >= 0x80) return this.names.toString('utf8', off, this.names.indexOf(0, off)) === name;
      if (names[off + k] !== c) return false;
    }
    return names[off + n] === 0;
  }

  /** Symbol i as an object, made once: a libc symbol is found by hundreds of references. */
  private cached(i: number, name: string): ElfSymbol {
    let s = this.made.get(i);
    if (!s) {
      s = this.symbol(i, name);
      this.made.set(i, s);
    }
    return s;
  }

  /** DT_HASH objects are rare: every symbol by name, indexed once. */
  private findSysv(name: string): readonly ElfSymbol[] {
    if (!this.byName) {
      this.byName = new Map();
      for (let i = 1; i < this.t.count; i++) {
        const nameOff = this.nameOffset(i);
        const n = this.names.toString('utf8', nameOff, this.names.indexOf(0, nameOff));
        const list = this.byName.get(n);
        if (list) list.push(i);
        else this.byName.set(n, [i]);
      }
    }
    return this.byName.get(name)?.map((i) => this.cached(i, name)) ?? NONE;
  }
}
