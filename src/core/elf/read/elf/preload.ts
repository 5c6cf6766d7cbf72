import {DT} from './dynamic.js';
import type {ElfFile} from './file.js';
import type {ParsedHeader, ProgramHeader} from './header.js';

/** Version chains are a few hundred bytes; one that runs further is read by the walk itself. */
const VERSIONS_GUESS = 1024;
/** Bytes of other sections a span may take along (.gnu.version_d between the tables, alignment). */
const SLACK = 16 * 1024;

/**
 * Plans one read for what reading the symbols needs: the linkers put .gnu.hash, .dynsym, .dynstr,
 * .gnu.version and .gnu.version_r (GNU ld) or the same tables in another order (lld) together at
 * the start of the first segment, so one pread of their span replaces six (each read costs more
 * than its bytes: file.ts). A plan only: every table is still located and checked as before, and
 * one outside the span (an unusual layout, a longer version chain) is read on its own. Tables
 * spread apart (patchelf moves .dynstr to the end of the file) get no plan: the span would carry
 * the code between them.
 */
export function preloadDynamicTables(file: ElfFile, h: ParsedHeader, value: (tag: number) => number | undefined, loads: ProgramHeader[]): void {
  const offsetOf = (tag: number): number => {
    const addr = value(tag);
    if (addr === undefined) return -1;
    for (let i = 0; i < loads.length; i++) {
      const p = loads[i];
      if (addr >= p.vaddr && addr < p.vaddr + p.filesz) return addr - p.vaddr + p.offset;
    }
    return -1;
  };
  const strtab = offsetOf(DT.STRTAB);
  const symtab = offsetOf(DT.SYMTAB);
  const strsz = value(DT.STRSZ) ?? 0;
  const entsize = h.is64 ? 24 : 16;
  // A string table past the end of the file fails its own read: no speculative read before that.
  if (strtab < 0 || symtab < 0 || !(strsz >= 0) || strtab + strsz > file.size) return;
  // .dynsym ends where .dynstr starts in GNU ld's layout; elsewhere this overestimates (more slack).
  const count = symtab < strtab ? Math.floor((strtab - symtab) / entsize) : 0;
  let start = Math.min(symtab, strtab);
  let end = Math.max(strtab + strsz, symtab + count * entsize);
  const take = (off: number, len: number): void => {
    if (off < 0) return;
    if (off < start) start = off;
    if (off + len > end) end = off + len;
  };
  // The hash table ld.so uses (DT_GNU_HASH when there are both); a DT_HASH beside it may still lie
  // between the others (LLVM's libraries). Room for each: about two words a symbol for DT_HASH,
  // three for DT_GNU_HASH (its bloom filter).
  const gnu = offsetOf(DT.GNU_HASH);
  take(gnu >= 0 ? gnu : offsetOf(DT.HASH), 16);
  take(offsetOf(DT.VERSYM), count * 2);
  take(offsetOf(DT.VERNEED), VERSIONS_GUESS);
  take(offsetOf(DT.VERDEF), VERSIONS_GUESS);
  end = Math.min(end, file.size);
  const hashes = (value(DT.GNU_HASH) === undefined ? 0 : 12) + (value(DT.HASH) === undefined ? 0 : 9);
  if (!(end - start <= strsz + count * (entsize + 2 + hashes) + 2 * VERSIONS_GUESS + SLACK)) return;
  file.preload(start, end - start);
}
