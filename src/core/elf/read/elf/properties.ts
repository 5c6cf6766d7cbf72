import {Fields} from './fields.js';
import type {ElfFile} from './file.js';
import type {ParsedHeader, ProgramHeader} from './header.js';

export const PT_NOTE = 4;
export const PT_GNU_PROPERTY = 0x6474e553;
const NT_GNU_PROPERTY_TYPE_0 = 5;
/** GNU_PROPERTY_X86_UINT32_OR_LO + 2: the x86 ISA levels the object needs (binutils 2.36 and later). */
export const GNU_PROPERTY_X86_ISA_1_NEEDED = 0xc0008002;
const EM_386 = 3;
const EM_X86_64 = 62;
/** Property notes are a few dozen bytes; a bigger segment is read only this far. */
const MAX_NOTE_BYTES = 64 * 1024;

/**
 * The x86 ISA level bits an object needs (GNU_PROPERTY_X86_ISA_1_NEEDED: 1 baseline, 2 x86-64-v2,
 * 4 v3, 8 v4), 0 when it says nothing. From PT_GNU_PROPERTY, else the PT_NOTE segments, as
 * ld.so reads them (sysdeps/x86/dl-prop.h: the first NT_GNU_PROPERTY_TYPE_0 note owned by "GNU",
 * aligned to the class's word size). A malformed note says nothing, as it does to ld.so.
 */
export function x86IsaNeeded(file: ElfFile, h: ParsedHeader, properties: ProgramHeader[] | null, notes: ProgramHeader[] | null): number {
  if (h.machine !== EM_X86_64 && h.machine !== EM_386) return 0;
  // The PT_GNU_PROPERTY segments when there are any, else every PT_NOTE (the caller sorted them
  // out in its one pass over the program headers).
  const segments = properties ?? notes;
  if (segments === null) return 0;
  const align = h.is64 ? 8 : 4;
  for (let i = 0; i < segments.length; i++) {
    const p = segments[i];
    const len = Math.min(p.filesz, MAX_NOTE_BYTES);
    if (!(len >= 16) || !(p.offset + len <= file.size)) continue;
    const found = isaInNotes(file.fields(p.offset, len, 'note segment'), p.offset, len, align);
    if (found !== null) return found;
  }
  return 0;
}

/**
 * The ISA_1_NEEDED value of the first GNU property note in [start, start + len) of `f` (file
 * offsets), 0 if that note has none, null without such a note.
 */
function isaInNotes(f: Fields, start: number, len: number, align: number): number | null {
  for (let rel = 0; rel + 12 <= len;) {
    const at = start + rel;
    const namesz = f.u32(at);
    const descsz = f.u32(at + 4);
    const type = f.u32(at + 8);
    const desc = rel + 12 + pad(namesz, 4);
    if (desc + descsz > len) return null;
    // "GNU\0"
    const isGnu = namesz === 4 && f.u8(at + 12) === 0x47 && f.u8(at + 13) === 0x4e && f.u8(at + 14) === 0x55 && f.u8(at + 15) === 0;
    if (type === NT_GNU_PROPERTY_TYPE_0 && isGnu) {
      // Properties: pr_type, pr_datasz, then the data padded to the word size.
      for (let q = desc; q + 8 <= desc + descsz;) {
        const prType = f.u32(start + q);
        const size = f.u32(start + q + 4);
        if (q + 8 + size > desc + descsz) return 0;
        if (prType === GNU_PROPERTY_X86_ISA_1_NEEDED) return size === 4 ? f.u32(start + q + 8) : 0;
        q += 8 + pad(size, align);
      }
      return 0;
    }
    rel = desc + pad(descsz, align === 8 && type === NT_GNU_PROPERTY_TYPE_0 ? 8 : 4);
  }
  return null;
}

function pad(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}
