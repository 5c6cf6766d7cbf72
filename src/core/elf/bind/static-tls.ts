import type {LoaderPlatform} from '../read/machine/platform.js';
import {versionAtMost} from '../read/ldcache/host-loader.js';
import {tunableInEffect} from '../read/machine/tunables.js';
import type {ElfInfo} from '../read/elf/types.js';

/**
 * glibc's static TLS block: every thread gets the TLS blocks of the objects the program started
 * with, plus a surplus, at fixed offsets from its thread pointer. An object accessed with the
 * initial-exec model (R_X86_64_TPOFF64, R_AARCH64_TLS_TPREL64; DF_STATIC_TLS: libgomp, jemalloc,
 * many Fortran and OpenMP runtimes) needs its block there; when a dlopen brings it, only the
 * surplus is left, and a block that does not fit makes the dlopen fail with "cannot allocate
 * memory in static TLS block" (elf/dl-reloc.c). Two layouts (elf/dl-tls.c):
 * - TLS_TCB_AT_TP (x86-64): the blocks lie below the thread pointer, the TCB above it;
 * - TLS_DTV_AT_TP (aarch64): a 16-byte TCB at the thread pointer, the blocks after it.
 * The arithmetic below is _dl_determine_tlsoffset's, _dl_tls_static_surplus_init's and
 * _dl_try_allocate_static_tls's for each, checked against the loaders of glibc 2.31, 2.36, 2.39,
 * 2.41 and 2.43 on x86-64 and of 2.36 and 2.41 on aarch64 (test/core/elf/static-tls.test.ts,
 * loader-glibc-releases.test.ts, loader-aarch64.test.ts).
 */

type Block = NonNullable<ElfInfo['tls']>;

/** LIBC_IE_TLS and OTHER_IE_TLS of elf/dl-tls.c; LEGACY_TLS makes the default total the historic 1664. */
const IE_TLS = 144;
const LEGACY_TLS = 144;
const DL_NNS = 16;

/**
 * Where each machine the model knows puts its static TLS: TLS_TCB_AT_TP, or TLS_DTV_AT_TP with its
 * TLS_TCB_SIZE and the TCB's alignment, which is the block's least alignment and what its size is
 * rounded to. On aarch64 that is 32 from glibc 2.35, whose struct pthread holds the 32-byte aligned
 * rseq area (2.41 moved the area into the block itself, and measures the same), and 16 before
 * (TCB_ALIGNMENT; not measured here). A block aligned to 64 cannot be placed by a dlopen there.
 */
type Layout = {atTp: 'tcb'; tcbAlign: number} | {atTp: 'dtv'; tcbSize: number; tcbAlign: number};

function layoutOf(machine: number, glibc: [number, number] | null): Layout | null {
  // x86-64: TCB_ALIGNMENT 64 (pthreaddef.h).
  if (machine === 62) return {atTp: 'tcb', tcbAlign: 64};
  if (machine === 183) return {atTp: 'dtv', tcbSize: 16, tcbAlign: glibc !== null && versionAtMost(glibc, 2, 34) ? 16 : 32};
  return null;
}

/** Whether the model knows this machine's static TLS layout. */
export function staticTlsModelled(machine: number): boolean {
  return layoutOf(machine, null) !== null;
}

/**
 * The surplus in bytes: (nns - 1) * 144 + nns * 144 + optional + 144, from glibc.rtld.nns (1 to 16,
 * default 4) and glibc.rtld.optional_static_tls (default 512): 1664 by default. The tunables came
 * with glibc 2.32 and its 2.31 stable branch (Debian's 2.31 honours them); before that, 1664.
 */
export interface StaticTlsSurplus {
  surplus: number;
  /** glibc.rtld.optional_static_tls in effect (0 where the tunable does not exist). */
  optional: number;
  /** Whether the loader has the tunables. */
  tunable: boolean;
}

export function staticTlsSurplus(tunables: string | undefined, glibc: [number, number] | null): StaticTlsSurplus {
  if (glibc !== null && versionAtMost(glibc, 2, 30)) return {surplus: 1664, optional: 0, tunable: false};
  const nns = Math.min(tunableInEffect(tunables, 'glibc.rtld.nns', (n) => n >= 1 && n <= DL_NNS, glibc) ?? 4, DL_NNS);
  const optional = tunableInEffect(tunables, 'glibc.rtld.optional_static_tls', (n) => n >= 0, glibc) ?? 512;
  return {surplus: (nns - 1) * IE_TLS + nns * IE_TLS + optional + LEGACY_TLS, optional, tunable: true};
}

const roundUp = (n: number, align: number): number => Math.ceil(n / align) * align;

/**
 * From glibc 2.41 the thread's rseq area lies in the static TLS block, after the objects' blocks
 * (whether rseq is registered or not, glibc.pthread.rseq=0 included): its size is the kernel's
 * rseq feature size, at least 32 bytes, aligned to at least 32 (AT_RSEQ_FEATURE_SIZE and
 * AT_RSEQ_ALIGN, Linux 6.3 and later). Measured with Debian's 2.41 and Ubuntu's 2.43.
 */
export function rseqArea(glibc: [number, number] | null, kernel: LoaderPlatform['rseq']): {size: number; align: number} | null {
  if (glibc !== null && versionAtMost(glibc, 2, 40)) return null;
  const a = Math.max(32, kernel.align ?? 0);
  return {size: roundUp(Math.max(32, kernel.featureSize ?? 0), a), align: a};
}

/** The static TLS block of one process: laid out at start, then carved from by dlopened objects. */
export class StaticTlsBlock {
  /** dl_tls_static_used: bytes taken so far (with TLS_DTV_AT_TP, the TCB's included). */
  used = 0;
  /** dl_tls_static_size (with TLS_TCB_AT_TP, without the TCB). */
  readonly size: number;
  /** dl_tls_static_align. */
  readonly align: number;
  /** dl_tls_static_optional: what is left of the surplus's optional part for TLS descriptors. */
  private optionalLeft: number;
  /** dl_tls_static_used when the program had started (the block's size was fixed from it). */
  private readonly startUsed: number;
  private readonly layout: Layout;
  private readonly placed = new Set<ElfInfo>();

  /**
   * `startup`: the objects the program starts with, in load order (the order ld.so numbers their
   * TLS modules); `extra`: a block after theirs (the rseq area of glibc 2.41 and later).
   */
  constructor(machine: number, glibc: [number, number] | null, startup: readonly ElfInfo[], readonly settings: StaticTlsSurplus, extra: {size: number; align: number} | null = null) {
    const layout = layoutOf(machine, glibc);
    if (!layout) throw new Error(`no static TLS layout for machine ${machine}`);
    this.layout = layout;
    // Before the tunables, TRY_STATIC_TLS took any room left.
    this.optionalLeft = settings.tunable ? settings.optional : Infinity;
    const blocks = startup.filter((info) => info.tls !== null);
    for (const info of blocks) this.placed.add(info);
    const {offset, maxAlign} = layout.atTp === 'tcb' ? layoutBelowTp(blocks.map((i) => i.tls!), layout.tcbAlign, extra) : layoutAfterTcb(blocks.map((i) => i.tls!), layout, extra);
    this.used = offset;
    this.startUsed = offset;
    this.size = roundUp(offset + settings.surplus, layout.atTp === 'tcb' ? maxAlign : layout.tcbAlign);
    this.align = maxAlign;
  }

  /** Whether the object's block already has its static offset (it came with the program's start, or a dlopen placed it). */
  has(info: ElfInfo): boolean {
    return this.placed.has(info);
  }

  /** Bytes still free for a dlopened object. */
  get free(): number {
    return this.size - this.used;
  }

  /**
   * _dl_try_allocate_static_tls for a dlopened object's block: true and the block placed, or false
   * (its alignment exceeds the block's, or it does not fit in what is left; for a TLS descriptor,
   * `optional`, in what is left of the optional part).
   */
  place(info: ElfInfo, optional = false): boolean {
    const b = info.tls as Block;
    if (b.align > this.align) return false;
    const end = this.endAfter(b);
    if (end === null) return false;
    const use = end - this.used;
    if (optional && use > this.optionalLeft) return false;
    if (optional) this.optionalLeft -= use;
    this.used = end;
    this.placed.add(info);
    return true;
  }

  /** dl_tls_static_used once `b` is placed, or null when it does not fit. */
  private endAfter(b: Block): number | null {
    if (this.layout.atTp === 'dtv') {
      const offset = roundUp(this.used - b.firstByte, b.align) + b.firstByte;
      return offset + b.size > this.size ? null : offset + b.size;
    }
    const free = this.size - this.used;
    const needed = b.size + b.firstByte;
    if (free < needed) return null;
    const n = Math.floor((free - needed) / b.align);
    return this.used + free - n * b.align - b.firstByte;
  }

  /**
   * How much more surplus would let `info` be placed now: with TLS_TCB_AT_TP a multiple of the
   * block's alignment; with TLS_DTV_AT_TP the least that makes the rounded size reach its end.
   */
  shortfall(info: ElfInfo): number {
    const b = info.tls as Block;
    if (this.layout.atTp === 'dtv') {
      const end = roundUp(this.used - b.firstByte, b.align) + b.firstByte + b.size;
      const a = this.layout.tcbAlign;
      return Math.max(0, roundUp(end, a) - a + 1 - (this.startUsed + this.settings.surplus));
    }
    return roundUp(Math.max(0, b.size + b.firstByte - this.free), this.align);
  }
}

/** _dl_determine_tlsoffset, TLS_TCB_AT_TP: offsets grow away from the thread pointer, gaps reused. */
function layoutBelowTp(blocks: readonly Block[], tcbAlign: number, extra: {size: number; align: number} | null): {offset: number; maxAlign: number} {
  let offset = 0;
  let freeTop = 0;
  let freeBottom = 0;
  let maxAlign = tcbAlign;
  for (const b of blocks) {
    // Padding before the block that a later, smaller block may use.
    const firstByte = (b.align - (b.firstByte % b.align)) % b.align;
    maxAlign = Math.max(maxAlign, b.align);
    if (freeBottom - freeTop >= b.size) {
      const off = roundUp(freeTop + b.size - firstByte, b.align) + firstByte;
      if (off <= freeBottom) {
        freeTop = off;
        continue;
      }
    }
    const off = roundUp(offset + b.size - firstByte, b.align) + firstByte;
    if (off > offset + b.size + (freeBottom - freeTop)) {
      freeTop = offset;
      freeBottom = off - b.size;
    }
    offset = off;
  }
  if (extra) {
    offset = roundUp(offset + extra.size, extra.align);
    maxAlign = Math.max(maxAlign, extra.align);
  }
  return {offset, maxAlign};
}

/** _dl_determine_tlsoffset, TLS_DTV_AT_TP: the blocks start right after the TCB, gaps reused. */
function layoutAfterTcb(blocks: readonly Block[], layout: {tcbSize: number; tcbAlign: number}, extra: {size: number; align: number} | null): {offset: number; maxAlign: number} {
  let offset = layout.tcbSize;
  let freeTop = 0;
  let freeBottom = 0;
  let maxAlign = layout.tcbAlign;
  for (const b of blocks) {
    const firstByte = (b.align - (b.firstByte % b.align)) % b.align;
    maxAlign = Math.max(maxAlign, b.align);
    if (b.size <= freeTop - freeBottom) {
      let off = roundUp(freeBottom, b.align);
      if (off - freeBottom < firstByte) off += b.align;
      if (off + b.size - firstByte <= freeTop) {
        freeBottom = off + b.size - firstByte;
        continue;
      }
    }
    let off = roundUp(offset, b.align);
    if (off - offset < firstByte) off += b.align;
    if (off - firstByte - offset > freeTop - freeBottom) {
      freeBottom = offset;
      freeTop = off - firstByte;
    }
    offset = off + b.size - firstByte;
  }
  if (extra) {
    offset = roundUp(offset, extra.align) + extra.size;
    maxAlign = Math.max(maxAlign, extra.align);
  }
  return {offset, maxAlign};
}
