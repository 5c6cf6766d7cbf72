import {readFileSync} from 'node:fs';

/**
 * This process's auxiliary vector (/proc/self/auxv): what the kernel tells every program it
 * starts, and so what the checked programs get on this machine (the page size, the rseq area).
 */
let entries: Map<number, number> | undefined;

export const AT_PAGESZ = 6;
export const AT_HWCAP = 16;
export const AT_HWCAP2 = 26;
export const AT_RSEQ_FEATURE_SIZE = 27;
export const AT_RSEQ_ALIGN = 28;

/** The value of one auxv entry, or undefined when the kernel does not give it (or there is no /proc). */
export function auxv(type: number): number | undefined {
  if (!entries) {
    entries = new Map();
    try {
      const aux = readFileSync('/proc/self/auxv');
      for (let i = 0; i + 16 <= aux.length; i += 16) {
        const t = Number(aux.readBigUInt64LE(i));
        if (t === 0) break;
        entries.set(t, Number(aux.readBigUInt64LE(i + 8)));
      }
    } catch {
      // no /proc: callers use their defaults
    }
  }
  return entries.get(type);
}
