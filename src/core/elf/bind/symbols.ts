import type {ElfInfo, ElfSymbol} from '../read/elf/types.js';

/**
 * Symbol binding rules of elf/dl-lookup.c (check_match, do_lookup_x) for glibc up to 2.41
 * (elf-loader-spec.md §3.4): which definitions an object offers and whether one satisfies a reference.
 */
const STB_LOCAL = 0;
const STB_WEAK = 2;
const STV_INTERNAL = 1;
const STV_HIDDEN = 2;
const SHN_ABS = 0xfff1;
const STT_TLS = 6;
/** Symbol types (STT_NOTYPE, OBJECT, FUNC, COMMON, TLS, GNU_IFUNC) and bindings (GLOBAL, WEAK, GNU_UNIQUE) a definition can have, as bit masks: asked for every candidate of every lookup. */
const DEFINABLE_TYPES = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 5) | (1 << 6) | (1 << 10);
const DEFINING_BINDINGS = (1 << 1) | (1 << 2) | (1 << 10);

/** A reference the loader must bind: an undefined, non-weak, default-visibility dynamic symbol. */
export interface SymbolRef {
  name: string;
  /** The requested version (null: unversioned). */
  version: string | null;
  /** The library the version is required from (vn_file). */
  versionFile: string | null;
  hidden: boolean;
  /** The GNU hash of the name, when the reader computed it (saves hashing it per lookup). */
  nameHash?: number;
}

/** One definition per name is the rule; an array only where a name has several versions. */
export type Defs = ElfSymbol | ElfSymbol[];
const definitionIndex = new WeakMap<ElfInfo, Map<string, Defs>>();
const referenceList = new WeakMap<ElfInfo, SymbolRef[]>();

/**
 * The definitions ld.so can find in an object, by name. With `wanted`, only names in it are
 * indexed: a check knows every name referenced in its processes, and indexing the 46 000
 * definitions of libLLVM to answer a few hundred lookups is most of the cost otherwise.
 */
export function buildDefinitions(info: ElfInfo, wanted?: Set<string>): Map<string, Defs> {
  if (info.lookup) throw new Error('buildDefinitions needs every symbol: read the object with {symbols: true}, or use defines()');
  const index = new Map<string, Defs>();
  // Without a hash table the loader finds nothing in an object.
  if (info.hashTable === 'none') return index;
  for (const s of info.symbols) {
    if (!s.hashed || !isDefinition(s)) continue;
    if (wanted && !wanted.has(s.name)) continue;
    const prev = index.get(s.name);
    if (prev === undefined) index.set(s.name, s);
    else if (Array.isArray(prev)) prev.push(s);
    else index.set(s.name, [prev, s]);
  }
  return index;
}

/** A symbol check_match can bind a reference to (any name and version). */
function isDefinition(s: ElfSymbol): boolean {
  // type and binding are 4-bit fields (st_info), so the shifts stay inside the masks.
  if (!s.defined || ((DEFINABLE_TYPES >> s.type) & 1) === 0 || ((DEFINING_BINDINGS >> s.binding) & 1) === 0) return false;
  if (s.visibility === STV_HIDDEN || s.visibility === STV_INTERNAL) return false;
  return s.value !== 0 || s.shndx === SHN_ABS || s.type === STT_TLS;
}

/** The full index of an object, kept while the ElfInfo lives. */
export function definitions(info: ElfInfo): Map<string, Defs> {
  let index = definitionIndex.get(info);
  if (!index) {
    index = buildDefinitions(info);
    definitionIndex.set(info, index);
  }
  return index;
}

/**
 * The references of an object that fail the process when nothing defines them (weak ones resolve
 * to 0; ones no relocation names are never looked up). The reader's symbols serve as references as they are (an ElfSymbol has every field a
 * SymbolRef needs, version null for indexes 0 and 1): no copy per symbol.
 */
export function references(info: ElfInfo): SymbolRef[] {
  let refs = referenceList.get(info);
  if (refs) return refs;
  // Only what a relocation names is looked up (dl-reloc.c): an unreferenced entry never fails.
  refs = info.symbols.filter((s) => !s.defined && s.unreferenced !== true && s.binding !== STB_LOCAL && s.binding !== STB_WEAK &&
    s.visibility !== STV_HIDDEN && s.visibility !== STV_INTERNAL && s.name !== '');
  referenceList.set(info, refs);
  return refs;
}

const versionedList = new WeakMap<ElfInfo, ElfSymbol[]>();

/**
 * The versioned references whose version names a library (a VERNEED entry: vn_file), weak ones
 * included: what glibc before 2.30 may stop at (./version-file-stop.ts). Whether a relocation
 * names each is for the caller to ask, as for references().
 */
export function versionedReferences(info: ElfInfo): readonly ElfSymbol[] {
  let refs = versionedList.get(info);
  if (refs) return refs;
  refs = info.symbols.filter((s) => !s.defined && s.unreferenced !== true && s.binding !== STB_LOCAL && s.version !== null && s.versionFile !== null &&
    s.visibility !== STV_HIDDEN && s.visibility !== STV_INTERNAL && s.name !== '');
  versionedList.set(info, refs);
  return refs;
}

/**
 * Does this object yield a definition for the reference (check_match)? The candidates come from
 * the index when given, else through the object's hash table when it was read with
 * {symbols: 'undefined'} (they are then filtered here: the table also leads to symbols that are
 * no definition), else from its full index. No array is made per call: a check asks this 100k times.
 */
export function defines(info: ElfInfo, ref: SymbolRef, index?: Map<string, Defs>): boolean {
  let found: Defs | readonly ElfSymbol[] | undefined;
  let filter = false;
  if (index) found = index.get(ref.name);
  else if (!info.lookup) found = definitions(info).get(ref.name);
  else if (info.hashTable === 'none') return false;
  else {
    found = info.lookup.find(ref.name, ref.nameHash);
    filter = true;
  }
  if (found === undefined) return false;
  const many = Array.isArray(found);
  const n = many ? (found as readonly ElfSymbol[]).length : 1;
  if (ref.version !== null) {
    for (let k = 0; k < n; k++) {
      const d = many ? (found as readonly ElfSymbol[])[k] : found as ElfSymbol;
      if (filter && !isDefinition(d)) continue;
      if (!info.hasVersym) return true;
      if (d.version === ref.version) return true;
      // An unversioned default definition satisfies a versioned request (glibc <= 2.41).
      if (d.versionIndex <= 1 && !d.hidden && !ref.hidden) return true;
    }
    return false;
  }
  let laterVersions = 0;
  for (let k = 0; k < n; k++) {
    const d = many ? (found as readonly ElfSymbol[])[k] : found as ElfSymbol;
    if (filter && !isDefinition(d)) continue;
    if (!info.hasVersym || d.versionIndex <= 2) return true;
    if (!d.hidden) laterVersions++;
  }
  // Only one default definition at a later version: the loader takes it.
  return laterVersions === 1;
}

/** Does the object define version node `name` (VERDEF, §3.3)? */
export function definesVersion(info: ElfInfo, name: string): boolean {
  // Asked for every version every object needs, in every process: libc's forty, as a set, once.
  let names = versionNames.get(info);
  if (names === undefined) versionNames.set(info, names = new Set(info.versionDefinitions.map((d) => d.name)));
  return names.has(name);
}

const versionNames = new WeakMap<ElfInfo, Set<string>>();
