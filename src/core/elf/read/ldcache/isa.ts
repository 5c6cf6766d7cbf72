import {readFileSync} from 'node:fs';
import {arch} from 'node:os';
import {hostLoaderFacts} from './host-loader.js';

/**
 * The x86-64 ISA level (1-4) of this machine's CPU as its ld.so searches glibc-hwcaps
 * (`ld.so --help`), else from /proc/cpuinfo flags as glibc's get-isa-level.h defines the levels. It decides which glibc-hwcaps subdirectories are active.
 * Null off x86-64 or when /proc/cpuinfo is unreadable.
 */
const LEVELS: string[][] = [
  ['cx16', 'lahf_lm', 'popcnt', 'pni', 'sse4_1', 'sse4_2', 'ssse3'],
  ['avx', 'avx2', 'bmi1', 'bmi2', 'f16c', 'fma', 'abm', 'movbe', 'xsave'],
  ['avx512f', 'avx512bw', 'avx512cd', 'avx512dq', 'avx512vl'],
];

let hostLevel: number | null | undefined;

export function hostX86IsaLevel(): number | null {
  if (hostLevel !== undefined) return hostLevel;
  hostLevel = null;
  if (arch() !== 'x64') return hostLevel;
  // The loader's own answer first: the flags can lack one the CPU has (issue 12).
  const facts = hostLoaderFacts('/lib64/ld-linux-x86-64.so.2');
  if (facts && facts.hwcapsKnown.some((n) => n.startsWith('x86-64-v'))) {
    const levels = facts.hwcaps.map((n) => /^x86-64-v(\d)$/.exec(n)?.[1]).filter(Boolean).map(Number);
    hostLevel = Math.max(1, ...levels);
    return hostLevel;
  }
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('flags'));
    if (line) hostLevel = isaLevelFromFlags(new Set(line.replace(/^flags\s*:/, '').trim().split(/\s+/)));
  } catch {
    // no /proc: leave it unknown; callers fall back to x86-64-v2 (elf-loader-spec §1.7)
  }
  return hostLevel;
}

export function isaLevelFromFlags(flags: Set<string>): number {
  let level = 1;
  for (const required of LEVELS) {
    if (!required.every((f) => flags.has(f))) break;
    level++;
  }
  return level;
}

/** Active glibc-hwcaps subdirectories for an x86-64 level, best first (x86-64-v4, v3, v2). */
export function x86HwcapsSubdirs(level: number): string[] {
  const out: string[] = [];
  for (let v = Math.min(level, 4); v >= 2; v--) out.push(`x86-64-v${v}`);
  return out;
}
