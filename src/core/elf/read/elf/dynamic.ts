import {ElfError} from './errors.js';
import type {ElfFile} from './file.js';
import type {ParsedHeader, ProgramHeader} from './header.js';

export const DT = {
  NULL: 0, NEEDED: 1, HASH: 4, STRTAB: 5, SYMTAB: 6, STRSZ: 10, SYMENT: 11, SONAME: 14, RPATH: 15,
  SYMBOLIC: 16, BIND_NOW: 24, RUNPATH: 29, FLAGS: 30,
  GNU_HASH: 0x6ffffef5, VERSYM: 0x6ffffff0, FLAGS_1: 0x6ffffffb,
  VERDEF: 0x6ffffffc, VERDEFNUM: 0x6ffffffd, VERNEED: 0x6ffffffe, VERNEEDNUM: 0x6fffffff,
  AUXILIARY: 0x7ffffffd, FILTER: 0x7fffffff,
} as const;

/** The decoded dynamic array. Single-valued tags keep the last occurrence, as ld.so does. */
export interface DynamicInfo {
  /** strtab offsets, in array order */
  needed: number[];
  /** DT_FILTER / DT_AUXILIARY, in array order, each with how many DT_NEEDED entries precede it. */
  filtees: Array<{offset: number; auxiliary: boolean; neededBefore: number}>;
  values: Map<number, number>;
}

/** No real dynamic array has more entries; a bigger PT_DYNAMIC is corrupt. */
const MAX_DYNAMIC_BYTES = 1024 * 1024;

export function readDynamic(file: ElfFile, h: ParsedHeader, dyn: ProgramHeader): DynamicInfo {
  const entsize = h.is64 ? 16 : 8;
  if (dyn.filesz > MAX_DYNAMIC_BYTES) {
    throw new ElfError(file.path, 'malformed', `PT_DYNAMIC is ${dyn.filesz} bytes, far larger than any dynamic section`);
  }
  const f = file.fields(dyn.offset, dyn.filesz, 'dynamic section (PT_DYNAMIC)', true);
  const info: DynamicInfo = {needed: [], filtees: [], values: new Map()};
  const valueAt = h.is64 ? 8 : 4;
  const end = dyn.offset + dyn.filesz;
  let terminated = false;
  for (let b = dyn.offset; b + entsize <= end; b += entsize) {
    const tag = f.sword(b);
    if (tag === DT.NULL) {
      terminated = true;
      break;
    }
    const value = f.word(b + valueAt);
    if (tag === DT.NEEDED) info.needed.push(value);
    else if (tag === DT.FILTER || tag === DT.AUXILIARY) info.filtees.push({offset: value, auxiliary: tag === DT.AUXILIARY, neededBefore: info.needed.length});
    // Flag words: only the low 32 bits carry defined bits; keep them even if the upper half is garbage.
    else if (tag === DT.FLAGS || tag === DT.FLAGS_1) info.values.set(tag, f.lowWord(b + valueAt));
    else info.values.set(tag, value);
  }
  if (!terminated) throw new ElfError(file.path, 'malformed', 'the dynamic section has no DT_NULL terminator');
  return info;
}
