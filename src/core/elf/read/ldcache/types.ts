/** One `/etc/ld.so.cache` entry (elf-loader-spec §2). */
export interface LdCacheEntry {
  /** The name ld.so looks up: a soname, or a file name for libraries without one. */
  key: string;
  /** The full path ld.so opens for it. */
  path: string;
  /** Type and ABI flags (0x0303 = libc6 x86-64, 0x0a03 = libc6 AArch64, 0x0003 = libc6 plain/i386). */
  flags: number;
  /** The ELF class the ABI flags imply, null when they do not say. */
  elfClass: 32 | 64 | null;
  /** The ABI as `ldconfig -p` prints it ('x86-64', 'AArch64', 'x32', '' for plain, ...). */
  arch: string;
  /** The raw 64-bit hwcap field as a hex string ('0x0' for normal entries). */
  hwcap: string;
  /** For glibc-hwcaps entries: the subdirectory name (x86-64-v3, ...); null otherwise. */
  hwcapsSubdir: string | null;
  /** For glibc-hwcaps entries: the x86 ISA level the file needs (0 = none or unknown). */
  isaLevel: number;
  /** A nonzero hwcap that is not a glibc-hwcaps entry: legacy (glibc <= 2.36), ignored by lookups. */
  legacyHwcap: boolean;
  /** The old osversion field (0 in every modern cache). */
  osVersion: number;
}

export interface LdCache {
  /** The cache file this came from. */
  file: string;
  /** Which layout was read; 'ldconfig-p' when `ldconfig -p` output had to be parsed, 'missing' for no cache. */
  format: 'new' | 'compat' | 'old' | 'ldconfig-p' | 'missing';
  /** Entries in file order (the order lookups scan). */
  entries: LdCacheEntry[];
  /** The generator string of the extension section (the ldconfig/glibc version), when present. */
  generator: string | null;
  /** Why the binary file could not be used, when it could not. */
  warnings: string[];
}
