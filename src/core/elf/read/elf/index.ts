/**
 * The ELF reader: what the loader model needs from a shared object or executable, read with
 * positioned reads of just the headers and dynamic tables (a 1.5 GB libtorch_cuda.so costs its
 * .dynsym/.dynstr at most). Every malformed input becomes an ElfError naming the file.
 * Reference: the System V gABI's "Object Files" and "Dynamic Linking" chapters, and glibc's elf/elf.h.
 */
import type {ElfHeaderInfo, ElfInfo} from './types.js';
import {DT, readDynamic} from './dynamic.js';
import {ElfError} from './errors.js';
import {ElfFile} from './file.js';
import {checkSegmentsInFile, parseHeader, PT_DYNAMIC, PT_GNU_STACK, PT_INTERP, PT_LOAD, PT_TLS, readProgramHeaders, vaddrToOffset, type ParsedHeader, type ProgramHeader} from './header.js';
import {countFromGnuHash, countFromSections, countFromSysvHash, type SymbolCount} from './hash.js';
import {StringTable} from './strings.js';
import {PT_GNU_PROPERTY, PT_NOTE, x86IsaNeeded} from './properties.js';
import {preloadDynamicTables} from './preload.js';
import {relocatedSymbols} from './relocations.js';
import {NO_LOOKUP, readSymbols, readUndefinedSymbols} from './symbols.js';
import {readVersionDefinitions, readVersionNeeds, versionTable} from './versions.js';

export {ElfError, type ElfErrorReason} from './errors.js';
export {readStats, resetReadStats} from './file.js';

export interface ReadElfOptions {
  /**
   * Read the dynamic symbols with their versions (costs .dynsym + .dynstr + .gnu.version).
   * 'undefined': every symbol is read and validated the same way, but only the undefined ones
   * become objects in `symbols`; `lookup` finds the others by name through the hash table
   * (what the loader model needs, at a fraction of the time and memory).
   */
  symbols?: boolean | 'undefined';
  /**
   * Also read the relocation tables and mark the undefined symbols no relocation names
   * (`unreferenced`): ld.so never looks those up. Costs a pass over DT_RELA/DT_REL/DT_JMPREL, so
   * the loader model asks only for objects that have references nothing defines.
   */
  relocations?: boolean;
}

const DF_SYMBOLIC = 0x2;
const DF_BIND_NOW = 0x8;
const DF_1_NOW = 0x1;

/** Just the ELF header: cheap, for skipping files of the wrong class or machine. */
export async function readElfHeader(path: string): Promise<ElfHeaderInfo> {
  return readElfHeaderSync(path);
}

export async function readElf(path: string, options: ReadElfOptions = {}): Promise<ElfInfo> {
  return readElfSync(path, options);
}

/**
 * readElfHeader without a promise. The reader is synchronous inside (positioned reads from the
 * main thread, see ./file.ts); callers that parse hundreds of files in a row use these.
 */
export function readElfHeaderSync(path: string): ElfHeaderInfo {
  const file = ElfFile.open(path);
  try {
    return publicHeader(parseHeader(file));
  } catch (error) {
    throw wrap(path, error);
  } finally {
    file.close();
  }
}

export function readElfSync(path: string, options: ReadElfOptions = {}): ElfInfo {
  const file = ElfFile.open(path);
  try {
    return parse(file, options);
  } catch (error) {
    throw wrap(path, error);
  } finally {
    file.close();
  }
}

/** What says whether a file is a program ld.so starts: its type, interpreter and dynamic section. */
export type ElfProgramShape = Pick<ElfInfo, 'path' | 'type' | 'interp' | 'dynamic'>;

/**
 * The program headers only, read and checked as `readElfSync` reads them up to the dynamic array: a
 * cached check asks this of its interpreter (python3) on every run, and the symbol tables it would
 * otherwise read there were a fifth of that run (issue 42).
 */
export function readProgramShapeSync(path: string): ElfProgramShape {
  const file = ElfFile.open(path);
  try {
    const h = parseHeader(file);
    const phdrs = readProgramHeaders(file, h);
    checkSegmentsInFile(file, phdrs);
    const interp = phdrs.find((p) => p.type === PT_INTERP);
    const dynamic = locateDynamic(file, h, phdrs) ? 'yes' : phdrs.some((p) => p.type === PT_DYNAMIC) ? 'debug-info' : 'none';
    return {path: h.path, type: h.type, interp: interp ? readInterp(file, interp) : null, dynamic};
  } catch (error) {
    throw wrap(path, error);
  } finally {
    file.close();
  }
}

function parse(file: ElfFile, options: ReadElfOptions): ElfInfo {
  const h = parseHeader(file);
  const phdrs = readProgramHeaders(file, h);
  checkSegmentsInFile(file, phdrs);
  // One pass over the program headers: the first of each kind, as the finds it replaces.
  let interpHeader: ProgramHeader | null = null;
  let stackFlags: number | null = null;
  let tlsHeader: ProgramHeader | null = null;
  let anyDynamic = false;
  let properties: ProgramHeader[] | null = null;
  let notes: ProgramHeader[] | null = null;
  const loads: ProgramHeader[] = [];
  for (let i = 0; i < phdrs.length; i++) {
    const p = phdrs[i];
    const type = p.type;
    if (type === PT_LOAD) loads.push(p);
    else if (type === PT_DYNAMIC) anyDynamic = true;
    else if (type === PT_INTERP) interpHeader ??= p;
    else if (type === PT_GNU_STACK) stackFlags ??= p.flags;
    else if (type === PT_TLS) tlsHeader ??= p;
    else if (type === PT_NOTE) (notes ??= []).push(p);
    else if (type === PT_GNU_PROPERTY) (properties ??= []).push(p);
  }
  const x86 = x86IsaNeeded(file, h, properties, notes);
  const loadList: ElfInfo['loads'] = [];
  for (let i = 0; i < loads.length; i++) loadList.push({offset: loads[i].offset, vaddr: loads[i].vaddr, filesz: loads[i].filesz});
  // One literal, every property in place from the start: one object shape for every file.
  const info: ElfInfo = {
    path: h.path, elfClass: h.elfClass, littleEndian: h.littleEndian, machine: h.machine, type: h.type, osabi: h.osabi,
    interp: null, soname: null, needed: [], rpath: null, runpath: null, flags1: 0,
    versionDefinitions: [], versionNeeds: [], symbols: [],
    // Until symbols are read: no symbol table (a static program, no DT_SYMTAB) finds nothing.
    lookup: options.symbols === 'undefined' ? NO_LOOKUP : undefined,
    symbolCount: 0, hashTable: 'none', hasVersym: false, dtFlags: 0, symbolic: false, bindNow: false, filtees: [],
    dynamic: 'none', x86IsaNeeded: x86, stackFlags, tls: tlsBlock(tlsHeader), loads: loadList,
  };
  if (interpHeader) info.interp = readInterp(file, interpHeader);
  const dynamic = locateDynamic(file, h, phdrs, loads);
  // A static executable or a relocatable object: nothing for the loader to resolve.
  if (!dynamic) {
    if (anyDynamic) info.dynamic = 'debug-info';
    return info;
  }
  info.dynamic = 'yes';
  const {dyn, value, toOffset} = dynamic;
  if (options.symbols) preloadDynamicTables(file, h, value, loads);

  const strtabAddr = value(DT.STRTAB);
  const strsz = value(DT.STRSZ) ?? 0;
  const strings = strtabAddr === undefined ? null
    : new StringTable(file, toOffset(strtabAddr, strsz, 'dynamic string table (DT_STRTAB)'), strsz);
  // The symbols' names load the whole table anyway: loaded first, the DT_NEEDED, SONAME, RUNPATH
  // and version names come from it, not from reads of its pieces (the same bytes read twice,
  // one 4 KB block or more per name that crosses one).
  if (options.symbols && strings) strings.loadAll();
  const str = (offset: number, what: string): string => {
    if (!strings) throw new ElfError(file.path, 'malformed', `${what} is present but the dynamic section has no DT_STRTAB`);
    return strings.get(offset, what);
  };
  for (const n of dyn.needed) info.needed.push(str(n, 'DT_NEEDED'));
  for (const f of dyn.filtees) info.filtees.push({name: str(f.offset, f.auxiliary ? 'DT_AUXILIARY' : 'DT_FILTER'), auxiliary: f.auxiliary, neededBefore: f.neededBefore});
  const soname = value(DT.SONAME);
  if (soname !== undefined) info.soname = str(soname, 'DT_SONAME');
  const rpath = value(DT.RPATH);
  if (rpath !== undefined) info.rpath = str(rpath, 'DT_RPATH');
  const runpath = value(DT.RUNPATH);
  if (runpath !== undefined) info.runpath = str(runpath, 'DT_RUNPATH');
  info.flags1 = value(DT.FLAGS_1) ?? 0;
  info.dtFlags = value(DT.FLAGS) ?? 0;
  info.symbolic = dyn.values.has(DT.SYMBOLIC) || (info.dtFlags & DF_SYMBOLIC) !== 0;
  info.bindNow = dyn.values.has(DT.BIND_NOW) || (info.dtFlags & DF_BIND_NOW) !== 0 || (info.flags1 & DF_1_NOW) !== 0;

  const verdef = value(DT.VERDEF);
  const verneed = value(DT.VERNEED);
  if ((verdef !== undefined || verneed !== undefined) && !strings) {
    throw new ElfError(file.path, 'malformed', 'version sections are present but the dynamic section has no DT_STRTAB');
  }
  if (verdef !== undefined) info.versionDefinitions = readVersionDefinitions(file, h, toOffset(verdef, 20, 'version definitions (DT_VERDEF)'), strings!);
  if (verneed !== undefined) info.versionNeeds = readVersionNeeds(file, h, toOffset(verneed, 16, 'version requirements (DT_VERNEED)'), strings!);

  const count = symbolCount(file, h, value(DT.GNU_HASH), value(DT.HASH), toOffset);
  info.symbolCount = count.count;
  info.hashTable = count.table;
  const versym = value(DT.VERSYM);
  info.hasVersym = versym !== undefined;

  const symtab = value(DT.SYMTAB);
  if (symtab === undefined || count.count === 0) return info;
  const entsize = value(DT.SYMENT) ?? (h.is64 ? 24 : 16);
  if (entsize < (h.is64 ? 24 : 16)) throw new ElfError(file.path, 'malformed', `DT_SYMENT ${entsize} is smaller than a symbol`);
  const symtabOff = toOffset(symtab, 0, 'dynamic symbol table (DT_SYMTAB)');
  // An absurd count from a corrupt hash table must fail here, before anything is allocated.
  if (count.count * entsize > file.size - symtabOff) {
    throw new ElfError(file.path, 'malformed',
      `the hash table says ${count.count} dynamic symbols, more than fit between DT_SYMTAB and the end of the file`);
  }
  if (options.symbols) {
    if (!strings) throw new ElfError(file.path, 'malformed', 'dynamic symbols are present but the dynamic section has no DT_STRTAB');
    const versymOff = versym === undefined ? null : toOffset(versym, count.count * 2, 'symbol versions (DT_VERSYM)');
    const tables = {
      symtabOff, entsize, count: count.count, versymOff, hashedFrom: count.symoffset, hashed: count.table !== 'none',
      gnuChainOff: count.chainOff, gnuBuckets: count.buckets, gnuBloom: count.bloom,
    };
    const versions = versionTable(info.versionDefinitions, info.versionNeeds);
    const relocated = options.relocations ? relocatedSymbols(file, h, dyn.values, count.count, toOffset)?.rank ?? null : null;
    if (options.symbols === 'undefined') {
      const {symbols, lookup} = readUndefinedSymbols(file, h, tables, strings, versions, relocated);
      info.symbols = symbols;
      info.lookup = lookup;
    } else {
      info.symbols = readSymbols(file, h, tables, strings, versions, relocated);
    }
  }
  return info;
}

/** How ld.so looks up one undefined name of an object (relocatedUndefinedNames). */
export interface LookedUp {
  /** The rank of its first relocation in the order ld.so relocates (./relocations.ts). */
  rank: number;
  /** Some relocation naming it is bound when the object is relocated; false: only PLT slots, bound at the first call unless binding is immediate. */
  eager: boolean;
}

/**
 * The names of the undefined dynamic symbols some relocation names (what ld.so looks up), each
 * with how it is looked up, read without going over the whole symbol table again: the dynamic
 * array, the relocation tables and the named entries only. Null when the object has no dynamic
 * symbols.
 */
export function relocatedUndefinedNames(path: string): Map<string, LookedUp> | null {
  return withRelocations(path, (t) => {
    const names = new Map<string, LookedUp>();
    for (let i = 1; i < t.count; i++) {
      if (t.marks.rank[i] === 0 || t.shndx(i) !== 0) continue;
      const name = t.name(i);
      // One name under two versions (foo@V1 and foo@V2): its first relocation, and eager if either is.
      const known = names.get(name);
      names.set(name, {rank: Math.min(t.marks.rank[i], known?.rank ?? Infinity), eager: t.marks.eager[i] === 1 || (known?.eager ?? false)});
    }
    return names;
  });
}

/** A program's copy relocation: the definition ld.so must find, outside the program, while it starts. */
export interface CopyReference {
  name: string;
  /** The version the program was linked against (null: unversioned). */
  version: string | null;
  /** The library that version is required from (vn_file). */
  versionFile: string | null;
  hidden: boolean;
  /** A weak symbol: a failed lookup leaves the copy alone. */
  weak: boolean;
  /** The rank of its relocation (relocatedUndefinedNames' ranks). */
  rank: number;
}

/**
 * The symbols an object's copy relocations name (R_X86_64_COPY and its like: only programs have
 * them), with the version each asks for. Null when the object has no dynamic symbols or
 * relocations the model can read.
 */
export function copyRelocations(path: string): CopyReference[] | null {
  return withRelocations(path, (t) => {
    const out: CopyReference[] = [];
    for (let i = 1; i < t.count; i++) {
      if (t.marks.copy[i] !== 0) out.push({...t.symbol(i), weak: t.binding(i) === STB_WEAK, rank: t.marks.copy[i]});
    }
    return out;
  });
}

const STB_LOCAL = 0;
const STB_WEAK = 2;

/** An initial-exec TLS relocation of an object: whose TLS block it needs a static offset in. */
export interface StaticTlsReference {
  /** null: the object's own block (no symbol, or a local one); else the symbol looked up. */
  symbol: {name: string; version: string | null; versionFile: string | null; hidden: boolean} | null;
  /** Its place among the object's relocation ranks (RelocatedSymbols.tpoff). */
  at: number;
  /** A TLS descriptor: placed statically only where the surplus's optional part has room, never a failure. */
  optional: boolean;
}

/**
 * The initial-exec TLS relocations of an object (R_X86_64_TPOFF64 and its like) and its TLS
 * descriptors, one of each per symbol, in relocation order. Null when the object has no dynamic
 * symbols or relocations the model can read.
 */
export function staticTlsReferences(path: string): StaticTlsReference[] | null {
  return withRelocations(path, (t) => t.marks.tpoff.map(({sym, at, optional}) => ({symbol: sym === 0 || t.binding(sym) === STB_LOCAL ? null : t.symbol(sym), at, optional})));
}

/** One object's relocation marks and raw access to the symbols they name (for the readers above). */
interface RelocationView {
  count: number;
  marks: NonNullable<ReturnType<typeof relocatedSymbols>>;
  name(i: number): string;
  shndx(i: number): number;
  binding(i: number): number;
  /** Symbol i with the version its .gnu.version entry names (the version tables read on first need). */
  symbol(i: number): {name: string; version: string | null; versionFile: string | null; hidden: boolean};
}

function withRelocations<T>(path: string, use: (view: RelocationView) => T): T | null {
  const file = ElfFile.open(path);
  try {
    const h = parseHeader(file);
    const phdrs = readProgramHeaders(file, h);
    const loads = phdrs.filter((p) => p.type === PT_LOAD);
    const dynamic = locateDynamic(file, h, phdrs, loads);
    if (!dynamic) return null;
    const {dyn, value, toOffset} = dynamic;
    const strtab = value(DT.STRTAB);
    const symtab = value(DT.SYMTAB);
    if (strtab === undefined || symtab === undefined) return null;
    // The names of every relocated symbol are read: with the tables in one read, from the whole
    // string table rather than a piece (and a read or a block) per name.
    preloadDynamicTables(file, h, value, loads);
    const strings = new StringTable(file, toOffset(strtab, value(DT.STRSZ) ?? 0, 'DT_STRTAB'), value(DT.STRSZ) ?? 0);
    if (file.preloaded(strings.offset, strings.size)) strings.loadAll();
    const count = symbolCount(file, h, value(DT.GNU_HASH), value(DT.HASH), toOffset).count;
    const marks = relocatedSymbols(file, h, dyn.values, count, toOffset);
    if (!marks) return null;
    const entsize = value(DT.SYMENT) ?? (h.is64 ? 24 : 16);
    const syms = file.read(toOffset(symtab, 0, 'DT_SYMTAB'), count * entsize, 'dynamic symbol table (DT_SYMTAB)');
    const versymAt = value(DT.VERSYM);
    const versym = versymAt === undefined ? null : file.read(toOffset(versymAt, count * 2, 'DT_VERSYM'), count * 2, 'symbol versions (DT_VERSYM)');
    const u16 = (buf: Buffer, at: number) => (h.littleEndian ? buf.readUInt16LE(at) : buf.readUInt16BE(at));
    let versions: ReturnType<typeof versionTable> | null = null;
    const versionsOnce = () => {
      if (versions) return versions;
      const verdef = value(DT.VERDEF);
      const verneed = value(DT.VERNEED);
      return versions = versionTable(
        verdef === undefined ? [] : readVersionDefinitions(file, h, toOffset(verdef, 20, 'version definitions (DT_VERDEF)'), strings),
        verneed === undefined ? [] : readVersionNeeds(file, h, toOffset(verneed, 16, 'version requirements (DT_VERNEED)'), strings));
    };
    const name = (i: number) => strings.get(h.littleEndian ? syms.readUInt32LE(i * entsize) : syms.readUInt32BE(i * entsize), `name of dynamic symbol ${i}`);
    return use({
      count, marks, name,
      shndx: (i) => u16(syms, i * entsize + (h.is64 ? 6 : 14)),
      binding: (i) => syms[i * entsize + (h.is64 ? 4 : 12)] >> 4,
      symbol: (i) => {
        const raw = versym ? u16(versym, i * 2) : 0;
        const entry = (raw & 0x7fff) >= 2 ? versionsOnce().get(raw & 0x7fff) : undefined;
        return {name: name(i), version: entry?.name ?? null, versionFile: entry?.file ?? null, hidden: (raw & 0x8000) !== 0};
      },
    });
  } catch (error) {
    throw wrap(path, error);
  } finally {
    file.close();
  }
}

/**
 * The dynamic array and address translation of an object (null: no PT_DYNAMIC). ld.so finds the
 * dynamic array at its address (l_ld), i.e. through the PT_LOAD that maps it; p_offset says the
 * same in every sane file and is the fallback when no segment covers it.
 */
function locateDynamic(file: ElfFile, h: ParsedHeader, phdrs: ProgramHeader[], loads = phdrs.filter((p) => p.type === PT_LOAD)): {
  dyn: ReturnType<typeof readDynamic>;
  value: (tag: number) => number | undefined;
  toOffset: (addr: number, len: number, what: string) => number;
} | null {
  // "Debuginfo only files from objcopy --only-keep-debug contain a PT_DYNAMIC segment with
  // p_filesz == 0": ld.so skips such a segment (dl-load.c), and so does this reader.
  const dynamicHeader = phdrs.find((p) => p.type === PT_DYNAMIC && p.filesz > 0);
  if (!dynamicHeader) return null;
  const mapped = loads.find((p) => dynamicHeader.vaddr >= p.vaddr && dynamicHeader.vaddr + dynamicHeader.filesz <= p.vaddr + p.filesz);
  const dyn = readDynamic(file, h, mapped ? {...dynamicHeader, offset: dynamicHeader.vaddr - mapped.vaddr + mapped.offset} : dynamicHeader);
  return {
    dyn,
    value: (tag) => dyn.values.get(tag),
    toOffset: (addr, len, what) => vaddrToOffset(file, loads, addr, len, what),
  };
}

function symbolCount(
  file: ElfFile, h: ParsedHeader, gnu: number | undefined, sysv: number | undefined,
  toOffset: (addr: number, len: number, what: string) => number,
): SymbolCount {
  // ld.so prefers DT_GNU_HASH when both exist (elf-loader-spec §4.3).
  if (gnu !== undefined) return countFromGnuHash(file, h, toOffset(gnu, 16, 'GNU hash table (DT_GNU_HASH)'));
  if (sysv !== undefined) return countFromSysvHash(file, h, toOffset(sysv, 8, 'SysV hash table (DT_HASH)'));
  return countFromSections(file, h);
}

/** The PT_TLS block as _dl_map_object_from_fd records it (dl-load.c); an empty one is none. */
function tlsBlock(tls: ProgramHeader | null): ElfInfo['tls'] {
  if (!tls || tls.memsz === 0) return null;
  const align = Math.max(tls.align, 1);
  return {size: tls.memsz, align, firstByte: tls.align === 0 ? 0 : tls.vaddr % align};
}

function readInterp(file: ElfFile, p: ProgramHeader): string {
  const buf = file.view(p.offset, Math.min(p.filesz, 4096), 'interpreter path (PT_INTERP)');
  const nul = buf.indexOf(0);
  return buf.toString('utf8', 0, nul < 0 ? buf.length : nul);
}

function publicHeader(h: ParsedHeader): ElfHeaderInfo {
  return {path: h.path, elfClass: h.elfClass, littleEndian: h.littleEndian, machine: h.machine, type: h.type, osabi: h.osabi};
}

/** Anything that escapes the parser (a RangeError from a DataView on a short buffer) is still this file's fault. */
function wrap(path: string, error: unknown): ElfError {
  if (error instanceof ElfError) return error;
  return new ElfError(path, 'malformed', `cannot be parsed: ${error instanceof Error ? error.message : String(error)}`, {cause: error});
}
