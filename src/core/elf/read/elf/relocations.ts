import type {ElfFile} from './file.js';
import type {ParsedHeader} from './header.js';

/**
 * Which dynamic symbols the loader looks up at all: the ones a relocation names (elf/dl-reloc.c
 * walks DT_RELA/DT_REL and DT_JMPREL; elf-loader-spec §3.4, §4.7). An undefined .dynsym entry
 * no relocation uses (`-Wl,-u,foo`, libstdc++'s `_ZSt21ios_base_library_initv`, an extension's
 * `PyExc_*` it never touches) is never bound, so it cannot fail the load.
 */
export const DT_REL = {
  PLTRELSZ: 2, RELA: 7, RELASZ: 8, RELAENT: 9, REL: 17, RELSZ: 18, RELENT: 19, PLTREL: 20, JMPREL: 23,
  RELACOUNT: 0x6ffffff9, RELCOUNT: 0x6ffffffa,
} as const;

/** Reads in slices: a 1.5 GB library's relocations are tens of MB, never needed at once. */
const CHUNK = 1 << 20;

/**
 * Each machine's PLT relocation (R_<arch>_JUMP_SLOT), by e_machine: the one kind ld.so binds lazily,
 * at the first call through the PLT, unless the object or the environment asks for immediate
 * binding (elf_machine_lazy_rel only points the slot at the PLT stub). Every other relocation,
 * and every one outside DT_JMPREL, is bound when the object is relocated. Machines not listed:
 * DT_JMPREL taken as all lazy, which is what the table is for.
 */
const JUMP_SLOT = new Map<number, number>([
  [62, 7], // x86-64: R_X86_64_JUMP_SLOT
  [3, 7], // i386: R_386_JMP_SLOT
  [183, 1026], // AArch64: R_AARCH64_JUMP_SLOT
  [40, 22], // ARM: R_ARM_JUMP_SLOT
  [20, 21], // PowerPC: R_PPC_JMP_SLOT
  [21, 21], // PowerPC64: R_PPC64_JMP_SLOT
  [22, 22], // s390: R_390_JMP_SLOT
  [243, 5], // RISC-V: R_RISCV_JUMP_SLOT
  [258, 5], // LoongArch: R_LARCH_JUMP_SLOT
]);

/**
 * Each machine's copy relocation (R_<arch>_COPY), by e_machine: a program's own copy of a
 * library's data object, whose definition ld.so looks up while the program starts, skipping the
 * program itself (ELF_RTYPE_CLASS_COPY).
 */
const COPY = new Map<number, number>([
  [62, 5], // R_X86_64_COPY
  [3, 5], // R_386_COPY
  [183, 1024], // R_AARCH64_COPY
  [40, 20], // R_ARM_COPY
  [20, 19], // R_PPC_COPY
  [21, 19], // R_PPC64_COPY
  [22, 19], // R_390_COPY
  [243, 4], // R_RISCV_COPY
  [258, 4], // R_LARCH_COPY
]);

/**
 * Each machine's initial-exec TLS relocations (R_<arch>_TPOFF*): an offset into the static TLS
 * block, which a dlopened object's TLS gets only from the block's surplus (elf/dl-reloc.c,
 * CHECK_STATIC_TLS). The machines whose static TLS layout ./static-tls.ts knows, and i386.
 */
const TPOFF = new Map<number, readonly number[]>([
  [62, [18, 23]], // R_X86_64_TPOFF64, R_X86_64_TPOFF32
  [3, [14, 37]], // R_386_TLS_TPOFF, R_386_TLS_TPOFF32
  [183, [1030]], // R_AARCH64_TLS_TPREL64
]);

/**
 * TLS descriptors (R_<arch>_TLSDESC; aarch64's default dialect, x86-64's -mtls-dialect=gnu2): in a
 * dlopened object ld.so places the block they name in the static TLS block when it fits in what is
 * left of the surplus's optional part (TRY_STATIC_TLS), else resolves them dynamically; either way
 * nothing fails, but a placed block is room a later initial-exec block no longer has.
 */
const TLSDESC = new Map<number, number>([
  [62, 36], // R_X86_64_TLSDESC
  [183, 1031], // R_AARCH64_TLSDESC
]);

/** What relocatedSymbols found, per dynamic symbol index. */
export interface RelocatedSymbols {
  /**
   * 0 where no relocation names the symbol, else the rank (from 1) of the first one that does, in
   * the order ld.so relocates (DT_RELA or DT_REL, then DT_JMPREL: ELF_DYNAMIC_RELOCATE): the order
   * an object's failing lookups are met in.
   */
  rank: Uint32Array;
  /** 1 where some relocation naming the symbol is bound when the object is relocated, lazy binding or not (see JUMP_SLOT). */
  eager: Uint8Array;
  /** Where a copy relocation names the symbol (see COPY): its rank (the first relocation naming it), else 0. */
  copy: Uint32Array;
  /**
   * The initial-exec TLS relocations (see TPOFF) and TLS descriptors (see TLSDESC, `optional`), the
   * first of each kind for each symbol index (0: the object's own TLS block), in relocation order;
   * `at` places each among the ranks (rank of the last symbol first named before it, plus 0.5).
   */
  tpoff: Array<{sym: number; at: number; optional: boolean}>;
}

/**
 * Which relocations name each dynamic symbol (RelocatedSymbols). Null when the object has no
 * relocation table the model can read (then every undefined symbol counts, as before).
 */
export function relocatedSymbols(
  file: ElfFile, h: ParsedHeader, values: Map<number, number>, count: number,
  toOffset: (addr: number, len: number, what: string) => number,
): RelocatedSymbols | null {
  const marks = new Uint32Array(count);
  const eager = new Uint8Array(count);
  const copy = new Uint32Array(count);
  const jumpSlot = JUMP_SLOT.get(h.machine);
  const copyType = COPY.get(h.machine);
  const tpoffTypes = TPOFF.get(h.machine) ?? [];
  const tlsdescType = TLSDESC.get(h.machine);
  const tpoff: Array<{sym: number; at: number; optional: boolean}> = [];
  const tpoffSeen = new Set<number>();
  // The first initial-exec relocation or descriptor of each kind for each symbol: where it places a block.
  const noteTls = (sym: number, type: number, at: number): void => {
    const optional = type === tlsdescType;
    if (!optional && !tpoffTypes.includes(type)) return;
    const key = sym * 2 + (optional ? 1 : 0);
    if (tpoffSeen.has(key)) return;
    tpoffSeen.add(key);
    tpoff.push({sym, at, optional});
  };
  let rank = 0;
  const tables: Array<{addr: number | undefined; size: number | undefined; rela: boolean; skip: number; what: string}> = [
    {addr: values.get(DT_REL.RELA), size: values.get(DT_REL.RELASZ), rela: true, skip: values.get(DT_REL.RELACOUNT) ?? 0, what: 'DT_RELA'},
    {addr: values.get(DT_REL.REL), size: values.get(DT_REL.RELSZ), rela: false, skip: values.get(DT_REL.RELCOUNT) ?? 0, what: 'DT_REL'},
    {addr: values.get(DT_REL.JMPREL), size: values.get(DT_REL.PLTRELSZ), rela: values.get(DT_REL.PLTREL) !== DT_REL.REL, skip: 0, what: 'DT_JMPREL'},
  ];
  for (const t of tables) {
    if (t.addr === undefined || !t.size) continue;
    const ent = t.rela ? (h.is64 ? 24 : 12) : (h.is64 ? 16 : 8);
    let off: number;
    try {
      off = toOffset(t.addr, t.size, `relocations (${t.what})`);
    } catch {
      // A table outside the file: not something this model can say anything from.
      return null;
    }
    // DT_RELACOUNT/DT_RELCOUNT relative relocations come first and name no symbol.
    let start = Math.min(t.skip, Math.floor(t.size / ent)) * ent;
    const end = Math.floor(t.size / ent) * ent;
    while (start < end) {
      const len = Math.min(end - start, Math.floor(CHUNK / ent) * ent);
      const buf = file.read(off + start, len, `relocations (${t.what})`);
      const plt = t.what === 'DT_JMPREL';
      for (let b = 0; b + ent <= len; b += ent) {
        // r_info follows r_offset: ELF64 sym = info >> 32 (the high word) and type = its low
        // word, ELF32 sym = info >> 8 and type = info & 0xff.
        const info32 = h.is64 ? 0 : (h.littleEndian ? buf.readUInt32LE(b + 4) : buf.readUInt32BE(b + 4));
        const sym = h.is64 ? (h.littleEndian ? buf.readUInt32LE(b + 12) : buf.readUInt32BE(b + 8)) : info32 >>> 8;
        if (sym >= count) continue;
        const type = h.is64 ? (h.littleEndian ? buf.readUInt32LE(b + 8) : buf.readUInt32BE(b + 12)) : info32 & 0xff;
        if (sym === 0) {
          noteTls(0, type, rank + 0.5);
          continue;
        }
        if (marks[sym] === 0) marks[sym] = ++rank;
        noteTls(sym, type, rank + 0.5);
        if (eager[sym] === 0 && (!plt || (jumpSlot !== undefined && type !== jumpSlot))) eager[sym] = 1;
        if (type === copyType) copy[sym] = marks[sym];
      }
      start += len;
    }
  }
  return {rank: marks, eager, copy, tpoff};
}
