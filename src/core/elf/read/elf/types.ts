/**
 * What the ELF reader returns (./index.ts), consumed by every later stage.
 * Field names follow the ELF specification (the System V gABI) and glibc's elf/elf.h.
 */
export interface ElfHeaderInfo {
  path: string;
  elfClass: 32 | 64;
  littleEndian: boolean;
  /** e_machine (EM_X86_64 = 62, EM_AARCH64 = 183, ...). */
  machine: number;
  /** e_type (ET_EXEC = 2, ET_DYN = 3). */
  type: number;
  /** EI_OSABI. */
  osabi: number;
}

export interface ElfVersionDefinition {
  /** vd_ndx: the index `.gnu.version` entries use. Index 1 (VER_FLG_BASE) names the object itself. */
  index: number;
  name: string;
  flags: number;
  hash: number;
  /** Names of the parent versions (vda entries after the first). */
  parents: string[];
}

export interface ElfVersionNeed {
  /** The library (vn_file, a DT_NEEDED name) that must define these versions. */
  file: string;
  versions: Array<{name: string; hash: number; flags: number; weak: boolean; /** vna_other */ index: number}>;
}

export interface ElfSymbol {
  name: string;
  /** st_shndx != SHN_UNDEF. */
  defined: boolean;
  /** STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2, STB_GNU_UNIQUE 10. */
  binding: number;
  /** STT_NOTYPE 0, STT_OBJECT 1, STT_FUNC 2, STT_TLS 6, STT_GNU_IFUNC 10, ... */
  type: number;
  /** STV_DEFAULT 0, STV_HIDDEN 2, ... (st_other & 3). */
  visibility: number;
  /** The version name from `.gnu.version` (null: no versioning, or index 0/1). */
  version: string | null;
  /** For an undefined symbol with a version: the library (vn_file) that version is required from. */
  versionFile: string | null;
  /** The `.gnu.version` hidden bit (0x8000): a non-default version (`sym@VER`, not `sym@@VER`). */
  hidden: boolean;
  /** The raw `.gnu.version` index (without the hidden bit); 0 when there is no table. */
  versionIndex: number;
  /** st_shndx (SHN_UNDEF 0, SHN_ABS 0xfff1): check_match rejects st_value 0 unless SHN_ABS or TLS. */
  shndx: number;
  /** st_value (values above 2^53 are clamped to Number.MAX_SAFE_INTEGER; only zero vs nonzero matters). */
  value: number;
  /** Whether ld.so can find this symbol through the hash table (GNU hash skips indexes below symoffset). */
  hashed: boolean;
  /**
   * Set on an undefined symbol no relocation names (DT_RELA/DT_REL/DT_JMPREL): ld.so never looks
   * it up, so it cannot fail the load. Absent when referenced, or when the relocations are unknown.
   */
  unreferenced?: boolean;
  /** The GNU hash of the name's bytes; set only by `readElf(path, {symbols: 'undefined'})`, for lookups elsewhere. */
  nameHash?: number;
}

/**
 * The definitions side of `readElf(path, {symbols: 'undefined'})`: the symbols ld.so's hash table
 * leads to for a name, read from the raw tables on demand instead of one object per symbol.
 */
export interface SymbolLookup {
  /**
   * Every dynamic symbol named `name` that the object's hash table reaches (none without a hash
   * table), defined or not: the caller applies check_match. `nameHash`: its GNU hash, if known.
   */
  find(name: string, nameHash?: number): readonly ElfSymbol[];
}

/** A DT_FILTER or DT_AUXILIARY entry, with its place among the DT_NEEDED entries. */
export interface Filtee {
  name: string;
  auxiliary: boolean;
  /** How many DT_NEEDED entries come before it in the dynamic array. */
  neededBefore: number;
}

export interface ElfInfo extends ElfHeaderInfo {
  /** PT_INTERP, for executables. */
  interp: string | null;
  soname: string | null;
  needed: string[];
  /** Raw DT_RPATH / DT_RUNPATH strings (colon lists, tokens such as $ORIGIN unexpanded). */
  rpath: string | null;
  runpath: string | null;
  /** DT_FLAGS_1 (DF_1_NODEFLIB = 0x800), 0 when absent. */
  flags1: number;
  versionDefinitions: ElfVersionDefinition[];
  versionNeeds: ElfVersionNeed[];
  /**
   * Dynamic symbols without the null symbol 0; empty unless asked for. With `symbols: 'undefined'`
   * only the undefined ones (st_shndx 0), in table order, and `lookup` answers for the rest.
   */
  symbols: ElfSymbol[];
  /** Set by `symbols: 'undefined'`: definitions by name, through the hash table. */
  lookup?: SymbolLookup;
  /** The number of dynamic symbols as DT_HASH / DT_GNU_HASH say. */
  symbolCount: number;
  /** The table ld.so looks definitions up in (DT_GNU_HASH wins); 'none': the loader finds no symbol here. */
  hashTable: 'gnu' | 'sysv' | 'none';
  /** DT_VERSYM present (check_match treats objects without it differently). */
  hasVersym: boolean;
  /** DT_FLAGS (DF_SYMBOLIC 0x2, DF_BIND_NOW 0x8), 0 when absent. */
  dtFlags: number;
  /** DT_SYMBOLIC or DF_SYMBOLIC: the object searches itself first. */
  symbolic: boolean;
  /** DT_BIND_NOW, DF_BIND_NOW or DF_1_NOW: PLT references are bound at start-up. */
  bindNow: boolean;
  /**
   * DT_FILTER / DT_AUXILIARY entries, in array order. ld.so loads them like DT_NEEDED but puts
   * each before the filtering object in the search list; a missing DT_AUXILIARY is ignored.
   */
  filtees: Filtee[];
  /**
   * The dynamic section ld.so would use: 'yes'; 'none' (no PT_DYNAMIC: a static program); or
   * 'debug-info', a PT_DYNAMIC without bytes in the file, as in the separate debug files of
   * `objcopy --only-keep-debug` (/usr/lib/debug), which ld.so skips (dl-load.c).
   */
  dynamic: 'yes' | 'none' | 'debug-info';
  /** x86 only: the ISA level bits its GNU property note says it needs (1 baseline, 2 v2, 4 v3, 8 v4); 0 when none. */
  x86IsaNeeded: number;
  /**
   * p_flags of its PT_GNU_STACK header (PF_X 1: it asks for an executable stack, as `ld -z execstack`
   * makes), or null without one (an object linked from an assembler file lacking .note.GNU-stack),
   * which glibc reads as DEFAULT_STACK_PERMS: executable too, on x86 and aarch64.
   */
  stackFlags: number | null;
  /**
   * Its PT_TLS block as ld.so keeps it (l_tls_blocksize = p_memsz, l_tls_align = p_align,
   * l_tls_firstbyte_offset = p_vaddr mod p_align), or null without one (or an empty one).
   */
  tls: {size: number; align: number; firstByte: number} | null;
  /** Its PT_LOAD segments in table order (what ld.so maps, and checks against the page size). */
  loads: Array<{offset: number; vaddr: number; filesz: number}>;
}
