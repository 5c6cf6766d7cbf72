import type {ElfInfo} from './types.js';

/**
 * Whether ld.so can map an object's PT_LOAD segments in pages of this size (elf/dl-load.c,
 * elf/dl-map-segments.h, glibc 2.35 and later: BZ #28676 and #28838). A segment whose file offset
 * and address differ by other than a whole number of pages, or segments laid out for smaller
 * pages that overlap once rounded to these across a gap, stop the load with "ELF load command
 * address/offset not page-aligned". Older loaders map such a file without a word (checked with
 * Debian's 2.31), so the caller asks only for 2.35 and later. Met by libraries built for 4 KB
 * pages on a 16 or 64 KB kernel (aarch64: Grace, GH200, Raspberry Pi 5), and by libraries that
 * `strip` rewrote after patchelf had moved their segments (manylinux wheels: numpy's OpenBLAS).
 */
export const MISALIGNED = 'ELF load command address/offset not page-aligned';

export function segmentsMisaligned(info: ElfInfo, pageSize: number): boolean {
  const loads = info.loads;
  if (loads.some((l) => (l.vaddr - l.offset) % pageSize !== 0)) return true;
  if (loads.length < 2) return false;
  const start = (addr: number): number => Math.floor(addr / pageSize) * pageSize;
  const end = (l: ElfInfo['loads'][number]): number => Math.ceil((l.vaddr + l.filesz) / pageSize) * pageSize;
  // A gap between consecutive segments makes ld.so map the first over the whole span and then
  // protect the holes: it refuses when the last segment's page starts inside the first's.
  const holes = loads.some((l, i) => i > 0 && end(loads[i - 1]) !== start(l.vaddr));
  return holes && start(loads[loads.length - 1].vaddr) < end(loads[0]);
}
