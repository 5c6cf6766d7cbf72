import {ElfError} from '../elf/errors.js';
import {Fields} from '../elf/fields.js';
import type {ElfFile} from '../elf/file.js';
import type {ParsedHeader} from '../elf/header.js';

/** A section of an ELF file, located by name in its section header table. */
export interface Section {
  name: string;
  /** File offset and size (bytes); SHT_NOBITS sections are never returned. */
  offset: number;
  size: number;
}

const SHT_NOBITS = 8;
/** Section names are short; a string table bigger than this is not one a compiler wrote. */
const MAX_SHSTRTAB = 16 * 1024 * 1024;

/**
 * The sections of `file` whose names are in `names`, in section header order, read with
 * positioned reads of the section header table and its string table only. A file without
 * section headers (stripped with `sstrip`) has none. A section whose bytes lie past the end of
 * the file is an ElfError ('truncated').
 */
export function findSections(file: ElfFile, h: ParsedHeader, names: ReadonlySet<string>): Section[] {
  if (h.shnum === 0 || h.shoff === 0) return [];
  const expected = h.is64 ? 64 : 40;
  if (h.shentsize !== expected) throw new ElfError(file.path, 'malformed', `section header entries of ${h.shentsize} bytes (expected ${expected})`);
  const table = new Fields(file.read(h.shoff, h.shnum * h.shentsize, 'section header table'), h.littleEndian, h.is64);
  const shstrndx = shstrIndex(file, h, table);
  if (shstrndx <= 0 || shstrndx >= h.shnum) return [];
  const entry = (i: number) => {
    const b = i * h.shentsize;
    return {
      name: table.u32(b),
      type: table.u32(b + 4),
      offset: h.is64 ? table.u64(b + 24) : table.u32(b + 16),
      size: h.is64 ? table.u64(b + 32) : table.u32(b + 20),
    };
  };
  const strs = entry(shstrndx);
  if (strs.size > MAX_SHSTRTAB) throw new ElfError(file.path, 'malformed', `section name table of ${strs.size} bytes`);
  const strtab = file.read(strs.offset, strs.size, 'section name table');
  const longest = Math.max(...[...names].map((n) => n.length));
  const found: Section[] = [];
  for (let i = 1; i < h.shnum; i++) {
    const s = entry(i);
    if (s.type === SHT_NOBITS || s.name >= strtab.length) continue;
    const end = strtab.indexOf(0, s.name);
    if (end < 0 || end - s.name > longest) continue;
    const name = strtab.toString('latin1', s.name, end);
    if (!names.has(name)) continue;
    file.check(s.offset, 0, `section ${name}`);
    if (!Number.isSafeInteger(s.size) || s.offset + s.size > file.size) {
      throw new ElfError(file.path, 'truncated', `section ${name} (offset ${s.offset}, ${s.size} bytes) lies past the end of the file (${file.size} bytes)`);
    }
    found.push({name, offset: s.offset, size: s.size});
  }
  return found;
}

/** e_shstrndx, or section 0's sh_link when it is SHN_XINDEX (more than 0xff00 sections). */
function shstrIndex(file: ElfFile, h: ParsedHeader, table: Fields): number {
  const head = new Fields(file.read(0, h.is64 ? 64 : 52, 'ELF header'), h.littleEndian, h.is64);
  const index = head.u16(h.is64 ? 62 : 50);
  return index === 0xffff ? table.u32(h.is64 ? 40 : 24) : index;
}
