import {Fields} from './fields.js';
import {ElfFile} from './file.js';
import {parseHeader, type ParsedHeader} from './header.js';

export const SHT_PROGBITS = 1;
export const SHT_NOTE = 7;

/** One section header, as far as the readers of constant data need it. */
export interface SectionHeader {
  name: string;
  type: number;
  offset: number;
  size: number;
}

/** The section name table is read up to this much (real tables are a few hundred bytes). */
const NAMES_LIMIT = 1024 * 1024;

/**
 * The section headers of an object, with their names; empty when it has none or they cannot be
 * trusted (a stripped-to-segments file, an entry size that is not the ELF class's). Reads the
 * header table and the name table only.
 */
export function sectionHeaders(file: ElfFile, h: ParsedHeader): SectionHeader[] {
  const entsize = h.is64 ? 64 : 40;
  if (h.shnum === 0 || h.shoff === 0 || h.shentsize !== entsize) return [];
  const ehdr = new Fields(file.read(0, h.is64 ? 64 : 52, 'ELF header'), h.littleEndian, h.is64);
  const shstrndx = ehdr.u16(h.is64 ? 62 : 50);
  if (shstrndx === 0 || shstrndx >= h.shnum) return [];
  const table = new Fields(file.read(h.shoff, h.shnum * entsize, 'section header table'), h.littleEndian, h.is64);
  const offsetOf = (i: number) => (h.is64 ? table.u64(i * entsize + 24) : table.u32(i * entsize + 16));
  const sizeOf = (i: number) => (h.is64 ? table.u64(i * entsize + 32) : table.u32(i * entsize + 20));
  const names = file.read(offsetOf(shstrndx), Math.min(sizeOf(shstrndx), NAMES_LIMIT), 'section name table');
  const out: SectionHeader[] = [];
  for (let i = 0; i < h.shnum; i++) {
    const at = table.u32(i * entsize);
    if (at >= names.length) continue;
    const end = names.indexOf(0, at);
    out.push({name: names.toString('latin1', at, end < 0 ? names.length : end), type: table.u32(i * entsize + 4), offset: offsetOf(i), size: sizeOf(i)});
  }
  return out;
}

/**
 * An object opened once for the readers of its sections (its dlopen notes, then its constant
 * strings): its header and section headers read once. A first check reads both of every object
 * that can call dlopen; each opening its own file read the same headers twice.
 */
export interface OpenedSections {
  file: ElfFile;
  h: ParsedHeader;
  sections: SectionHeader[];
}

/** `fn` on the object at `path` opened (ElfFile.open's errors), its header and section headers read; closed after. */
export function withSections<T>(path: string, fn: (o: OpenedSections) => T): T {
  const file = ElfFile.open(path);
  try {
    const h = parseHeader(file);
    return fn({file, h, sections: sectionHeaders(file, h)});
  } finally {
    file.close();
  }
}
