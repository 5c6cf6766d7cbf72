import type {ElfHeaderInfo} from './types.js';
import {ElfError} from './errors.js';
import type {ElfFile} from './file.js';

export const PT_LOAD = 1;
export const PT_DYNAMIC = 2;
export const PT_INTERP = 3;
export const PT_TLS = 7;
export const PT_GNU_STACK = 0x6474e551;
export const PF_X = 1;

/** The ELF header with the table locations the rest of the reader needs. */
export interface ParsedHeader extends ElfHeaderInfo {
  is64: boolean;
  phoff: number;
  phentsize: number;
  phnum: number;
  shoff: number;
  shentsize: number;
  shnum: number;
}

export interface ProgramHeader {
  type: number;
  /** p_flags (PF_X 1, PF_W 2, PF_R 4). */
  flags: number;
  offset: number;
  vaddr: number;
  filesz: number;
  memsz: number;
  align: number;
}

const MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);
const EHDR_SIZE = {32: 52, 64: 64} as const;
const PHDR_SIZE = {32: 32, 64: 56} as const;

export function parseHeader(file: ElfFile): ParsedHeader {
  const {path} = file;
  const head = file.view(0, Math.min(64, file.size), 'ELF header');
  const magicLen = Math.min(4, head.length);
  if (!head.subarray(0, magicLen).equals(MAGIC.subarray(0, magicLen))) {
    const detail = notElfDetail(head);
    throw new ElfError(path, 'not-elf', detail, detail.includes('linker script')
      ? {hint: 'Linker scripts such as libc.so are read by the link editor (ld) only; the dynamic loader never loads them. Point at the library they name instead.'}
      : {});
  }
  if (head.length < 16) {
    throw new ElfError(path, 'truncated', `file too short for an ELF header (${file.size} bytes)`);
  }
  const klass = head[4];
  if (klass !== 1 && klass !== 2) throw new ElfError(path, 'malformed', `invalid ELF class ${klass} in e_ident[EI_CLASS]`);
  const data = head[5];
  if (data !== 1 && data !== 2) throw new ElfError(path, 'malformed', `invalid byte order ${data} in e_ident[EI_DATA]`);
  if (head[6] !== 1) throw new ElfError(path, 'unsupported', `unknown ELF version ${head[6]} in e_ident[EI_VERSION]`);
  const elfClass = klass === 2 ? 64 : 32;
  if (head.length < EHDR_SIZE[elfClass]) {
    throw new ElfError(path, 'truncated', `file too short for an ELF${elfClass} header (${file.size} bytes)`);
  }
  const is64 = elfClass === 64;
  file.format(data === 1, is64);
  const f = file.fields(0, EHDR_SIZE[elfClass], 'ELF header');
  const header: ParsedHeader = {
    path,
    elfClass,
    littleEndian: data === 1,
    machine: f.u16(18),
    type: f.u16(16),
    osabi: head[7],
    is64,
    phoff: f.word(is64 ? 32 : 28),
    shoff: f.word(is64 ? 40 : 32),
    phentsize: f.u16(is64 ? 54 : 42),
    phnum: f.u16(is64 ? 56 : 44),
    shentsize: f.u16(is64 ? 58 : 46),
    shnum: f.u16(is64 ? 60 : 48),
  };
  return header;
}

/** What to say about a file without ELF magic; linker scripts get named as such. */
function notElfDetail(head: Buffer): string {
  if (head.length === 0) return 'empty file, not an ELF file';
  const text = head.toString('latin1').trimStart();
  if (/^\/\*\s*GNU ld script/.test(text) || /^(INPUT|GROUP|OUTPUT_FORMAT)\s*\(/.test(text)) {
    return 'is a linker script (used by the link editor only), not an ELF shared object';
  }
  return 'not an ELF file (no ELF magic number)';
}

export function readProgramHeaders(file: ElfFile, h: ParsedHeader): ProgramHeader[] {
  if (h.phnum === 0) return [];
  const expected = PHDR_SIZE[h.elfClass];
  if (h.phentsize !== expected) {
    throw new ElfError(file.path, 'malformed', `e_phentsize is ${h.phentsize}, expected ${expected} for ELF${h.elfClass}`);
  }
  const f = file.fields(h.phoff, h.phnum * h.phentsize, 'program header table');
  const headers: ProgramHeader[] = [];
  for (let i = 0; i < h.phnum; i++) {
    const b = h.phoff + i * h.phentsize;
    headers.push(h.is64
      ? {type: f.u32(b), flags: f.u32(b + 4), offset: f.u64(b + 8), vaddr: f.u64(b + 16), filesz: f.u64(b + 32), memsz: f.u64(b + 40), align: f.u64(b + 48)}
      : {type: f.u32(b), flags: f.u32(b + 24), offset: f.u32(b + 4), vaddr: f.u32(b + 8), filesz: f.u32(b + 16), memsz: f.u32(b + 20), align: f.u32(b + 28)});
  }
  return headers;
}

/**
 * Every PT_LOAD's file image lies inside the file. ld.so maps the segments without comparing them
 * with the file size (_dl_map_segments), so a library cut off after its headers still "opens":
 * the process then dies of SIGBUS as soon as it touches a page past the end (the zero fill of
 * .bss, a relocation), and `ldd` exits 135. A file cut inside its last page loads with zeros for
 * the missing bytes: damaged all the same.
 */
export function checkSegmentsInFile(file: ElfFile, phdrs: ProgramHeader[]): void {
  for (let i = 0; i < phdrs.length; i++) {
    const p = phdrs[i];
    if (p.type !== PT_LOAD || p.filesz === 0) continue;
    const end = p.offset + p.filesz;
    // NaN (a u64 above 2^53) is past any file too.
    if (end <= file.size) continue;
    const where = `loadable segment ${i} (PT_LOAD, file offset ${p.offset}, ${p.filesz} bytes)`;
    const pages = Math.ceil(file.size / 4096) * 4096;
    throw new ElfError(file.path, 'truncated', !(end <= pages)
      ? `${where} ends past the end of the file (${file.size} bytes): the loader maps it without checking, and the process dies of SIGBUS ("Bus error") when it touches the missing part`
      : `${where} ends ${end - file.size} bytes past the end of the file (${file.size} bytes): the loader reads the missing bytes as zeros`);
  }
}

/**
 * Virtual address to file offset through the PT_LOAD that holds it (any order: patchelf appends
 * segments). `len` bytes must lie in the segment's file image.
 */
export function vaddrToOffset(file: ElfFile, loads: ProgramHeader[], addr: number, len: number, what: string): number {
  if (Number.isNaN(addr)) throw new ElfError(file.path, 'malformed', `${what}: address out of range`);
  for (const p of loads) {
    if (addr >= p.vaddr && addr < p.vaddr + p.filesz) {
      const off = addr - p.vaddr + p.offset;
      // A table may legitimately run to the end of the segment's file image, not past it.
      if (addr + len > p.vaddr + p.filesz) {
        throw new ElfError(file.path, 'malformed', `${what} at address 0x${addr.toString(16)} runs past the end of its segment`);
      }
      return off;
    }
  }
  throw new ElfError(file.path, 'malformed', `${what} at address 0x${addr.toString(16)} is not inside any loadable segment`);
}
