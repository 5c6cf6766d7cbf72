import {auxv, AT_RSEQ_ALIGN, AT_RSEQ_FEATURE_SIZE} from './auxv.js';
import {versionAtMost} from './ldcache/host-loader.js';
import {tunableInEffect} from './tunables.js';
import type {ElfInfo} from './types.js';

/**
 * glibc's static TLS block, x86-64 layout (TLS_TCB_AT_TP): every thread gets, below its thread
 * pointer, the TLS blocks of the objects the program started with, plus a surplus. An object
 * accessed with the initial-exec model (R_X86_64_TPOFF64, DF_STATIC_TLS: libgomp, jemalloc, many
 * Fortran and OpenMP runtimes) needs its block at a fixed offset in there; when a dlopen brings
 * it, only the surplus is left, and a block that does not fit makes the dlopen fail with
 * "cannot allocate memory in static TLS block" (elf/dl-reloc.c). The arithmetic below is
 * elf/dl-tls.c's (_dl_determine_tlsoffset, _dl_tls_static_surplus_init) and dl-reloc.c's
 * (_dl_try_allocate_static_tls), checked against the loaders of glibc 2.31, 2.36, 2.39, 2.41 and 2.43
 * (test/core/elf/static-tls.test.ts, loader-glibc-releases.test.ts).
 */

type Block = NonNullable<ElfInfo['tls']>;

/** TLS_TCB_ALIGN on x86-64: the alignment of struct pthread. */
const TCB_ALIGN = 64;
/** LIBC_IE_TLS and OTHER_IE_TLS of elf/dl-tls.c; LEGACY_TLS makes the default total the historic 1664. */
const IE_TLS = 144;
const LEGACY_TLS = 144;
const DL_NNS = 16;

/** Whether the model knows this machine's static TLS layout. */
export function staticTlsModelled(machine: number): boolean {
  return machine === 62;
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
export function rseqArea(glibc: [number, number] | null): {size: number; align: number} | null {
  if (glibc !== null && versionAtMost(glibc, 2, 40)) return null;
  const a = Math.max(32, auxv(AT_RSEQ_ALIGN) ?? 0);
  return {size: roundUp(Math.max(32, auxv(AT_RSEQ_FEATURE_SIZE) ?? 0), a), align: a};
}

/** The static TLS block of one process: laid out at start, then carved from by dlopened objects. */
export class StaticTlsBlock {
  /** dl_tls_static_used: bytes below the thread pointer taken so far. */
  used = 0;
  /** dl_tls_static_size without the TCB. */
  readonly size: number;
  /** dl_tls_static_align. */
  readonly align: number;
  private readonly placed = new Set<ElfInfo>();

  /**
   * `startup`: the objects the program starts with, in load order (the order ld.so numbers their
   * TLS modules); `extra`: a block after theirs (the rseq area of glibc 2.41 and later).
   */
  constructor(startup: readonly ElfInfo[], readonly settings: StaticTlsSurplus, extra: {size: number; align: number} | null = null) {
    let offset = 0;
    let freeTop = 0;
    let freeBottom = 0;
    let maxAlign = TCB_ALIGN;
    for (const info of startup) {
      const b = info.tls;
      if (!b) continue;
      this.placed.add(info);
      // Padding before the block that a later, smaller block may use (_dl_determine_tlsoffset).
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
    this.used = offset;
    this.size = roundUp(offset + settings.surplus, maxAlign);
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
   * (its alignment exceeds the block's, or it does not fit in what is left).
   */
  place(info: ElfInfo): boolean {
    const b = info.tls as Block;
    if (b.align > this.align) return false;
    const free = this.size - this.used;
    const needed = b.size + b.firstByte;
    if (free < needed) return false;
    const n = Math.floor((free - needed) / b.align);
    this.used += free - n * b.align - b.firstByte;
    this.placed.add(info);
    return true;
  }

  /** How much more surplus would let `info` be placed now (a multiple of the block's alignment). */
  shortfall(info: ElfInfo): number {
    const b = info.tls as Block;
    return roundUp(Math.max(0, b.size + b.firstByte - this.free), this.align);
  }
}
