import {ElfError} from './errors.js';
import {Fields} from './fields.js';
import {ElfFile} from './file.js';
import {parseHeader, PF_X, readProgramHeaders, PT_LOAD, type ParsedHeader} from './header.js';

const SHT_PROGBITS = 1;
const PF_W = 2;
/** Read in pieces: a library's .rodata reaches tens of MB (libnvrtc 8 MB, libcuda 20 MB). */
const CHUNK = 4 * 1024 * 1024;
/** Without section headers the read-only segments are scanned instead, up to this much. */
const SEGMENT_LIMIT = 64 * 1024 * 1024;

/** The file ranges that hold an object's constant strings: `.rodata`, else its read-only, non-executable segments. */
function constantRanges(file: ElfFile, h: ParsedHeader): Array<[number, number]> {
  const sections = rodataSections(file, h);
  if (sections.length > 0) return sections;
  const ranges: Array<[number, number]> = [];
  let total = 0;
  for (const ph of readProgramHeaders(file, h)) {
    if (ph.type !== PT_LOAD || (ph.flags & (PF_X | PF_W)) !== 0 || ph.filesz === 0) continue;
    const size = Math.min(ph.filesz, SEGMENT_LIMIT - total, file.size - ph.offset);
    if (size <= 0) break;
    ranges.push([ph.offset, size]);
    total += size;
  }
  return ranges;
}

function rodataSections(file: ElfFile, h: ParsedHeader): Array<[number, number]> {
  const entsize = h.is64 ? 64 : 40;
  if (h.shnum === 0 || h.shoff === 0 || h.shentsize !== entsize) return [];
  const ehdr = new Fields(file.read(0, h.is64 ? 64 : 52, 'ELF header'), h.littleEndian, h.is64);
  const shstrndx = ehdr.u16(h.is64 ? 62 : 50);
  if (shstrndx === 0 || shstrndx >= h.shnum) return [];
  const table = new Fields(file.read(h.shoff, h.shnum * entsize, 'section header table'), h.littleEndian, h.is64);
  const offsetOf = (i: number) => (h.is64 ? table.u64(i * entsize + 24) : table.u32(i * entsize + 16));
  const sizeOf = (i: number) => (h.is64 ? table.u64(i * entsize + 32) : table.u32(i * entsize + 20));
  const namesOff = offsetOf(shstrndx);
  const namesSize = Math.min(sizeOf(shstrndx), 1024 * 1024);
  const names = file.read(namesOff, namesSize, 'section name table');
  const ranges: Array<[number, number]> = [];
  for (let i = 0; i < h.shnum; i++) {
    if (table.u32(i * entsize + 4) !== SHT_PROGBITS) continue;
    const at = table.u32(i * entsize);
    if (at >= names.length) continue;
    const end = names.indexOf(0, at);
    const name = names.toString('latin1', at, end < 0 ? names.length : end);
    if (name !== '.rodata' && !name.startsWith('.rodata.')) continue;
    const off = offsetOf(i);
    const size = sizeOf(i);
    file.check(off, size, `section ${name}`);
    ranges.push([off, size]);
  }
  return ranges;
}

/**
 * The NUL-terminated constant strings of an ELF object that match `pattern` in whole (the names a
 * library passes to dlopen live there: libcudart's "libcuda.so.1", libnvrtc's
 * "libnvrtc-builtins.so.12.4"), each once, in file order. Reads `.rodata` in pieces with
 * positioned reads, never the whole file. `pattern` must not use the g or y flags.
 */
export function constantStrings(path: string, pattern: RegExp): string[] {
  const whole = new RegExp(`(?<=\\0)(?:${pattern.source})(?=\\0)`, `g${pattern.flags.replace(/[gy]/g, '')}`);
  const found = new Set<string>();
  const file = ElfFile.open(path);
  try {
    const h = parseHeader(file);
    for (const [start, size] of constantRanges(file, h)) {
      // Pieces overlap by the longest string a match may need, so none is cut in two unseen.
      const overlap = 4096;
      for (let off = start; off < start + size; off += CHUNK) {
        const from = Math.max(start, off - overlap);
        const len = Math.min(start + size, off + CHUNK) - from;
        // A leading NUL so that a string at the very start of the range matches too.
        const text = '\0' + file.read(from, len, 'constant strings').toString('latin1');
        for (const m of text.matchAll(whole)) found.add(m[0]);
      }
    }
  } catch (error) {
    if (error instanceof ElfError) throw error;
    throw new ElfError(path, 'io', `cannot read its constant strings: ${(error as Error).message}`);
  } finally {
    file.close();
  }
  return [...found];
}
