import {auxv, AT_PAGESZ, AT_RSEQ_ALIGN, AT_RSEQ_FEATURE_SIZE} from './auxv.js';
import {existsSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {glibcVersionOfFile, hostLoaderFacts, loaderFileFacts, versionAtMost, type LoaderFactsStore} from '../ldcache/host-loader.js';
import {realpathIn} from './sysroot.js';

/**
 * What ld.so compiles in or reads from the CPU, for one ELF class and machine
 * (elf-loader-spec.md §1.6, §1.7, §1.10). Computed without starting a process:
 * the directory layout tells Debian multiarch from lib64 distributions, /proc/cpuinfo the ISA level.
 */
export interface LoaderPlatform {
  elfClass: 32 | 64;
  machine: number;
  /** System (trusted) directories, sysroot-prefixed, each ending in '/'. */
  systemDirs: string[];
  /** Subdirectories probed before each search directory, most preferred first (without the dir itself). */
  hwcapsSubdirs: string[];
  /** $PLATFORM. */
  platform: string;
  /** $LIB. */
  lib: string;
  /** The interpreter path (inside the sysroot) ld.so registers under, e.g. /lib64/ld-linux-x86-64.so.2. */
  interp: string | null;
  /** The root all absolute paths of the target system are under ('' for the live system). */
  sysroot: string;
  /** The target glibc release [major, minor] (the sysroot's), null when unknown (latest rules apply). */
  glibc: [number, number] | null;
  /** For ld.so.cache lookups under glibc <= 2.36: which legacy hwcap entries count (undefined: none). */
  legacyHwcap?: {important: bigint; platformBit: bigint | null};
  /**
   * How ld.so sorts the objects it relocates (_dl_sort_maps): its default, and whether
   * GLIBC_TUNABLES=glibc.rtld.dynamic_sort=1|2 can change it (only a loader with the DFS sorter has the tunable).
   */
  dsoSort: {default: DsoSortAlgorithm; tunable: boolean};
  /**
   * x86-64 with glibc 2.33 or later: the ISA level bits of the CPU (1 baseline, 2 v2, 4 v3, 8 v4),
   * which every object's GNU_PROPERTY_X86_ISA_1_NEEDED must be within (dl_isa_level_check); null: no such check.
   */
  x86IsaBits: number | null;
  /** The kernel's page size (AT_PAGESZ; 4 KB on x86-64, 4, 16 or 64 KB on aarch64), which ld.so maps segments in. */
  pageSize: number;
  /**
   * The kernel's rseq area (AT_RSEQ_FEATURE_SIZE and AT_RSEQ_ALIGN, Linux 6.3 and later; null
   * members when it does not say), which glibc 2.41 and later put in the static TLS block.
   * Part of the platform so that a cached result does not outlive a change of kernel.
   */
  rseq: {featureSize: number | null; align: number | null};
}

/** glibc.rtld.dynamic_sort: 1 is the original algorithm, 2 the depth-first one (elf/dl-sort-maps.c). */
export type DsoSortAlgorithm = 'original' | 'dfs';

/**
 * The sorter of the target's loader: DFS by default from glibc 2.35; before, only where the loader
 * carries the tunable (a distribution's backport, as RHEL 8 and 9 did), else the original one.
 * Unknown loaders get the latest rules.
 */
function dsoSortOf(interpPath: string, glibc: [number, number] | null): LoaderPlatform['dsoSort'] {
  if (!glibc || !versionAtMost(glibc, 2, 34)) return {default: 'dfs', tunable: true};
  const backported = loaderFileFacts(interpPath)?.dynamicSortTunable ?? false;
  return backported ? {default: 'dfs', tunable: true} : {default: 'original', tunable: false};
}

export const EM_386 = 3;
export const EM_X86_64 = 62;
export const EM_AARCH64 = 183;

interface MachineFacts {
  triplet: string;
  lib64: string;
  interp: string;
  platform: string;
}

function machineFacts(elfClass: 32 | 64, machine: number): MachineFacts | undefined {
  if (machine === EM_X86_64 && elfClass === 64) return {triplet: 'x86_64-linux-gnu', lib64: 'lib64', interp: '/lib64/ld-linux-x86-64.so.2', platform: 'x86_64'};
  if (machine === EM_AARCH64 && elfClass === 64) return {triplet: 'aarch64-linux-gnu', lib64: 'lib64', interp: '/lib/ld-linux-aarch64.so.1', platform: 'aarch64'};
  if (machine === EM_386 && elfClass === 32) return {triplet: 'i386-linux-gnu', lib64: 'lib', interp: '/lib/ld-linux.so.2', platform: 'i686'};
  return undefined;
}

/** The loader of this machine's own programs (the one hostLoaderFacts asks), or null for an architecture without a model. */
export function hostLoaderPath(): string | null {
  const machine = process.arch === 'x64' ? EM_X86_64 : process.arch === 'arm64' ? EM_AARCH64 : null;
  return machine === null ? null : machineFacts(64, machine)?.interp ?? null;
}

/**
 * The glibc version of the target: read from its loader's bytes (the sysroot's when there is
 * one; glibc 2.33 and later carry their release there), else from its libc.so.6's (every
 * release: "GNU C Library ... stable release version 2.31."), else from the ld.so.cache
 * generator string ("... stable release version 2.36"), else the one Node runs on
 * (process.report costs ~20 ms, so only then and only for the live system).
 */
function glibcVersion(interpPath: string, libcPaths: string[], generator: () => string | null | undefined, live: boolean): [number, number] | null {
  const fromFile = glibcVersionOfFile(interpPath);
  if (fromFile) return fromFile;
  for (const libc of libcPaths) {
    const fromLibc = glibcVersionOfFile(libc);
    if (fromLibc) return fromLibc;
  }
  const generatorText = generator();
  let text = generatorText ? /release version (\d+\.\d+)/.exec(generatorText)?.[1] : undefined;
  if (!text && live) text = (process.report?.getReport() as {header?: {glibcVersionRuntime?: string}} | undefined)?.header?.glibcVersionRuntime;
  const m = /^(\d+)\.(\d+)/.exec(text ?? '');
  return m ? [Number(m[1]), Number(m[2])] : null;
}

let cpuFlagsCache: {flags: Set<string>; vendor: string} | undefined;
function cpuFlags(): {flags: Set<string>; vendor: string} {
  if (cpuFlagsCache) return cpuFlagsCache;
  let text = '';
  try {
    text = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    // not Linux or no /proc: assume the baseline
  }
  const flags = new Set((/^flags\s*:(.*)$/m.exec(text)?.[1] ?? '').trim().split(/\s+/));
  const vendor = /^vendor_id\s*:\s*(\S+)/m.exec(text)?.[1] ?? '';
  cpuFlagsCache = {flags, vendor};
  return cpuFlagsCache;
}

/**
 * x86-64 micro-architecture levels from CPU flags (glibc sysdeps/x86/get-isa-level.h), best
 * first: only the fallback where the host loader cannot say (glibc < 2.33, no ld.so).
 */
export function x86IsaLevels(flags: Set<string> = cpuFlags().flags): string[] {
  const has = (...names: string[]) => names.every((n) => flags.has(n));
  const levels: string[] = [];
  const v2 = has('cx16', 'lahf_lm', 'popcnt', 'sse4_1', 'sse4_2', 'ssse3');
  const v3 = v2 && has('avx', 'avx2', 'bmi1', 'bmi2', 'f16c', 'fma', 'abm', 'movbe', 'xsave');
  const v4 = v3 && has('avx512f', 'avx512bw', 'avx512cd', 'avx512dq', 'avx512vl');
  if (v4) levels.push('x86-64-v4');
  if (v3) levels.push('x86-64-v3');
  if (v2) levels.push('x86-64-v2');
  return levels;
}

/** Bit numbers of x86 legacy hwcap names (sysdeps/x86/dl-hwcap.h): subdirectories nest by them. */
const LEGACY_BITS: Record<string, number> = {sse2: 0, x86_64: 1, avx512_1: 2};

/**
 * The legacy subdirectories of glibc <= 2.36 (_dl_important_hwcaps): every combination of the
 * hwcap names, the platform and tls, the largest first, each path highest component first
 * (observed on 2.36: tls/x86_64/x86_64, tls/x86_64, tls, x86_64/x86_64, x86_64).
 */
export function legacySubdirs(hwcapNames: string[], platform: string | null): string[] {
  const comps = [...hwcapNames].sort((a, b) => (LEGACY_BITS[a] ?? 99) - (LEGACY_BITS[b] ?? 99));
  if (platform) comps.push(platform);
  comps.push('tls');
  const out: string[] = [];
  for (let mask = (1 << comps.length) - 1; mask > 0; mask--) {
    const parts: string[] = [];
    for (let bit = comps.length - 1; bit >= 0; bit--) if (mask & (1 << bit)) parts.push(comps[bit]);
    const sub = parts.join('/');
    if (!out.includes(sub)) out.push(sub);
  }
  return out;
}

/** Platforms by class:machine:sysroot, where the loader's or libc's bytes name the glibc release. */
const cache = new Map<string, LoaderPlatform | null>();
/** The others, whose release comes from the ld.so.cache generator string: by class:machine:sysroot:generator. */
const byGenerator = new Map<string, LoaderPlatform | null>();
const needsGenerator = new Set<string>();

/** Whether this host's loader runs objects of this machine and class (then it is asked). */
function hostMachine(machine: number, elfClass: 32 | 64): boolean {
  if (process.platform !== 'linux') return false;
  if (process.arch === 'x64') return machine === EM_X86_64 && elfClass === 64;
  if (process.arch === 'arm64') return machine === EM_AARCH64 && elfClass === 64;
  return false;
}

/**
 * The loader facts for objects of this class and machine, or null when this host's loader
 * would not run them at all (an unknown machine). `store` keeps what the host's loader says
 * across processes (hostLoaderFacts).
 */
export function loaderPlatform(
  elfClass: 32 | 64, machine: number, sysroot = '', cacheGenerator?: string | null | (() => string | null), store?: LoaderFactsStore,
): LoaderPlatform | null {
  const base = `${elfClass}:${machine}:${sysroot}`;
  if (cache.has(base)) return cache.get(base)!;
  // The ld.so.cache's generator string counts only where no file names the release: given as a
  // function, the cache is read only then (a check answered from the verdict cache reads none).
  let generator: string | null | undefined;
  let generatorRead = false;
  const readGenerator = (): string | null | undefined => {
    if (!generatorRead) generator = typeof cacheGenerator === 'function' ? cacheGenerator() : cacheGenerator;
    generatorRead = true;
    return generator;
  };
  if (needsGenerator.has(base)) {
    const known = byGenerator.get(`${base}:${readGenerator() ?? ''}`);
    if (known !== undefined) return known;
  }
  const facts = machineFacts(elfClass, machine);
  let result: LoaderPlatform | null = null;
  if (facts) {
    const root = sysroot.replace(/\/+$/, '');
    // Debian and Ubuntu patch the system list to the multiarch directories plus /lib and /usr/lib.
    const multiarch = existsSync(join(root || '/', 'lib', facts.triplet)) || existsSync(join(root || '/', 'usr', 'lib', facts.triplet));
    const dirs = multiarch
      ? [`/lib/${facts.triplet}/`, `/usr/lib/${facts.triplet}/`, '/lib/', '/usr/lib/']
      : [`/${facts.lib64}/`, `/usr/${facts.lib64}/`];
    // The image's loader is a link on most systems (Debian's /lib64/ld-linux-x86-64.so.2 ->
    // /lib/x86_64-linux-gnu/ld-2.31.so): followed inside the image, never on the host.
    const inImage = (path: string): string => (root === '' ? path : realpathIn(root, root + path) ?? root + path);
    const interpFile = inImage(facts.interp);
    const glibc = glibcVersion(interpFile, dirs.map((d) => inImage(`${d}libc.so.6`)), readGenerator, root === '');
    // CPU facts come from the host's loader for this machine (never a program inside the sysroot).
    const host = hostMachine(machine, elfClass) ? hostLoaderFacts(facts.interp, store) : null;
    let platform = host?.platform ?? facts.platform;
    const hwcaps: string[] = [];
    let legacyHwcap: LoaderPlatform['legacyHwcap'];
    let x86IsaBits: number | null = null;
    if (machine === EM_X86_64 && elfClass === 64) {
      if (!host) {
        const {flags, vendor} = cpuFlags();
        // glibc overrides AT_PLATFORM on Intel CPUs with these features (sysdeps/x86/cpu-features.c).
        if (vendor === 'GenuineIntel' && ['avx2', 'fma', 'bmi1', 'bmi2', 'abm', 'movbe', 'popcnt'].every((f) => flags.has(f))) platform = 'haswell';
      }
      // glibc-hwcaps exist from 2.33: the levels the loader says it searches, else the flags'.
      if (!glibc || !versionAtMost(glibc, 2, 32)) {
        const levels = host && host.hwcapsKnown.length > 0 ? host.hwcaps : x86IsaLevels();
        for (const level of levels) hwcaps.push(`glibc-hwcaps/${level}`);
        // The ISA level check (glibc 2.33 too) uses the CPU's isa_1, which the loader prints; else
        // the levels searched tell it (they differ only when GLIBC_TUNABLES masks CPU features).
        x86IsaBits = host?.isa1 ?? levels.reduce((bits, level) => bits | (1 << (Number(/^x86-64-v(\d)$/.exec(level)?.[1] ?? 1) - 1)), 1);
      }
      if (glibc && versionAtMost(glibc, 2, 36)) {
        // Legacy tls/platform/hwcap subdirectories, removed in glibc 2.37 (§1.7 item 3). A host
        // loader of 2.37 or later no longer lists them: x86_64 is then the one important hwcap.
        const names = host && host.legacy.length > 0 ? host.legacy : ['x86_64'];
        for (const sub of legacySubdirs(names, platform)) if (!hwcaps.includes(sub)) hwcaps.push(sub);
        legacyHwcap = {important: host?.hwcapImportant ?? 0x2n, platformBit: host ? host.platformBit : null};
      }
    } else if (glibc && versionAtMost(glibc, 2, 36)) {
      // Other machines (aarch64) have no glibc-hwcaps levels, but up to 2.36 the same legacy
      // subdirectories: tls, the platform, and the CPU's important hwcaps (aarch64: atomics),
      // which only this machine's own loader can tell; for an image of another machine the
      // CPU is unknown and only tls/ and the platform's directory are searched.
      for (const sub of legacySubdirs(host?.legacy ?? [], platform)) hwcaps.push(sub);
    }
    result = {
      elfClass, machine, sysroot: root,
      systemDirs: dirs.map((d) => root + d),
      hwcapsSubdirs: hwcaps,
      platform,
      lib: multiarch ? `lib/${facts.triplet}` : facts.lib64,
      interp: facts.interp,
      glibc,
      legacyHwcap,
      dsoSort: dsoSortOf(interpFile, glibc),
      x86IsaBits,
      // This machine's kernel, also for an image under a sysroot (the page size of the machine it runs on is not in it).
      pageSize: auxv(AT_PAGESZ) ?? 4096,
      rseq: {featureSize: auxv(AT_RSEQ_FEATURE_SIZE) ?? null, align: auxv(AT_RSEQ_ALIGN) ?? null},
    };
  }
  if (generatorRead) {
    needsGenerator.add(base);
    byGenerator.set(`${base}:${generator ?? ''}`, result);
  } else {
    cache.set(base, result);
  }
  return result;
}
