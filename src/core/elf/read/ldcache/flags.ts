/**
 * The flag word of cache entries (glibc sysdeps/generic/ldconfig.h) and how `ldconfig -p` names it
 * (print_entry, elf/cache.c).
 */
const TYPE_NAMES: Record<number, string> = {0: 'libc4', 1: 'ELF', 2: 'libc5', 3: 'libc6'};

const ABI: Record<number, {name: string; elfClass: 32 | 64 | null}> = {
  0x0000: {name: '', elfClass: null},
  0x0100: {name: '64bit', elfClass: 64}, // SPARC
  0x0200: {name: 'IA-64', elfClass: 64},
  0x0300: {name: 'x86-64', elfClass: 64},
  0x0400: {name: '64bit', elfClass: 64}, // s390
  0x0500: {name: '64bit', elfClass: 64}, // powerpc
  0x0600: {name: 'N32', elfClass: 32},
  0x0700: {name: '64bit', elfClass: 64}, // mips n64
  0x0800: {name: 'x32', elfClass: 32},
  0x0900: {name: 'hard-float', elfClass: 32},
  0x0a00: {name: 'AArch64', elfClass: 64},
  0x0b00: {name: 'soft-float', elfClass: 32},
  0x0c00: {name: 'nan2008', elfClass: 32},
  0x0d00: {name: 'N32,nan2008', elfClass: 32},
  0x0e00: {name: '64bit,nan2008', elfClass: 64},
  0x0f00: {name: 'soft-float', elfClass: null}, // RISC-V
  0x1000: {name: 'double-float', elfClass: null},
  0x1100: {name: 'soft-float', elfClass: 64}, // LoongArch
  0x1200: {name: 'double-float', elfClass: 64},
};

export function flagsTypeName(flags: number): string {
  return TYPE_NAMES[flags & 0xff] ?? 'unknown';
}

export function flagsArch(flags: number): string {
  const abi = flags & 0xff00;
  return ABI[abi]?.name ?? String(abi);
}

export function flagsElfClass(flags: number): 32 | 64 | null {
  return ABI[flags & 0xff00]?.elfClass ?? null;
}

/**
 * The flags ld.so accepts for a process of this class and machine (elf-loader-spec §2.4):
 * x86_64 0x0303, x32 0x0803, aarch64 0x0a03; other targets the generic rule (1 or 3).
 */
export function flagsAccepted(flags: number, elfClass: 32 | 64, machine: number): boolean {
  if (machine === 62) return flags === (elfClass === 64 ? 0x0303 : 0x0803);
  if (machine === 183 && elfClass === 64) return flags === 0x0a03;
  return flags === 1 || flags === 3;
}

/** The flags an `ldconfig -p` label such as `libc6,x86-64` stands for (the fallback parser). */
export function flagsFromLabel(type: string, arch: string): number | null {
  const t = Object.entries(TYPE_NAMES).find(([, name]) => name === type);
  if (!t) return null;
  if (arch === '') return Number(t[0]);
  // Several ABIs share a name ('64bit'); the host's machine decides which one ldconfig meant.
  const candidates = Object.entries(ABI).filter(([, v]) => v.name === arch).map(([k]) => Number(k));
  if (candidates.length === 0) return /^\d+$/.test(arch) ? Number(t[0]) | Number(arch) : null;
  return Number(t[0]) | candidates[0];
}

/** The printed form `ldconfig -p` uses between the parentheses. */
export function flagsLabel(flags: number): string {
  const arch = flagsArch(flags);
  return arch ? `${flagsTypeName(flags)},${arch}` : flagsTypeName(flags);
}
