import type {ElfSymbol} from '../types.js';
import {ElfError} from './errors.js';
import {Fields} from './fields.js';
import type {ElfFile} from './file.js';
import type {ParsedHeader} from './header.js';
import type {StringTable} from './strings.js';
import {gnuHash} from './hash.js';

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
}

/** The dynamic symbols 1..count-1 with their `.gnu.version` data (elf-loader-spec §3.1, §4.5). */
export async function readSymbols(
  file: ElfFile, h: ParsedHeader, t: SymbolTables, strings: StringTable, versions: Map<number, {name: string; file: string | null}>,
): Promise<ElfSymbol[]> {
  if (t.count <= 1) return [];
  const syms = new Fields(await file.read(t.symtabOff, t.count * t.entsize, 'dynamic symbol table (DT_SYMTAB)'), h.littleEndian, h.is64);
  const versym = t.versymOff === null ? null
    : new Fields(await file.read(t.versymOff, t.count * 2, 'symbol version table (DT_VERSYM)'), h.littleEndian, h.is64);
  await strings.loadAll();
  const chain = t.gnuChainOff === undefined || t.count <= t.hashedFrom ? null
    : new Fields(await file.read(t.gnuChainOff, (t.count - t.hashedFrom) * 4, 'GNU hash chain'), h.littleEndian, h.is64);
  const out: ElfSymbol[] = [];
  for (let i = 1; i < t.count; i++) {
    const b = i * t.entsize;
    const nameOff = syms.u32(b);
    const name = strings.getLoaded(nameOff, `name of dynamic symbol ${i} of ${t.count} (the count the hash table gives)`);
    const info = syms.u8(b + (h.is64 ? 4 : 12));
    const other = syms.u8(b + (h.is64 ? 5 : 13));
    const shndx = syms.u16(b + (h.is64 ? 6 : 14));
    const value = h.is64 ? syms.u64(b + 8) : syms.u32(b + 4);
    // A chain word that does not match the name's hash means a corrupt table (ld.so would not find
    // the symbol, or would walk into garbage): reject the file rather than report made-up symbols.
    if (chain && i >= t.hashedFrom && ((chain.u32((i - t.hashedFrom) * 4) | 1) !== (gnuHash(strings.loaded, nameOff) | 1))) {
      throw new ElfError(file.path, 'malformed', `the GNU hash table does not match dynamic symbol ${i} (corrupt DT_GNU_HASH)`);
    }
    const raw = versym ? versym.u16(i * 2) : 0;
    const index = raw & 0x7fff;
    let version: string | null = null;
    let versionFile: string | null = null;
    if (versym && index >= 2) {
      const entry = versions.get(index);
      if (!entry) {
        throw new ElfError(file.path, 'malformed', `dynamic symbol ${i} uses version index ${index}, which no verdef or verneed entry defines`);
      }
      version = entry.name;
      versionFile = entry.file;
    }
    out.push({
      name,
      defined: shndx !== 0,
      binding: info >> 4,
      type: info & 0xf,
      visibility: other & 3,
      version,
      versionFile,
      hidden: (raw & 0x8000) !== 0,
      versionIndex: index,
      shndx,
      // NaN only for values above 2^53; what matters to the loader model is zero vs nonzero.
      value: Number.isNaN(value) ? Number.MAX_SAFE_INTEGER : value,
      hashed: t.hashed && i >= t.hashedFrom,
    });
  }
  return out;
}
