import {closeSync, openSync, readSync, fstatSync} from 'node:fs';

/**
 * What this machine's own ld.so says it searches (elf-loader-spec §1.7): the loader, not the
 * CPU flags, decides. /proc/cpuinfo can lack a flag the CPU has (a hypervisor hiding `abm`
 * while LZCNT works), and glibc applies its own rules (usable-feature checks, tunables): only
 * `ld.so --help` ("supported, searched") and `ld.so --list-diagnostics` (dl_platform) are
 * exact. The host's system loader is a trusted program; files under a sysroot are never run.
 */
export interface HostLoaderFacts {
  /** glibc-hwcaps subdirectory names ld.so searches, most preferred first. */
  hwcaps: string[];
  /** Every glibc-hwcaps name this loader knows, supported or not (to tell "none" from "unknown"). */
  hwcapsKnown: string[];
  /** Legacy hwcap names searched (glibc <= 2.36), in the order --help lists them, without tls and the platform. */
  legacy: string[];
  /** $PLATFORM (AT_PLATFORM as ld.so overrides it), null when the loader does not say. */
  platform: string | null;
  /** dl_hwcap & the important mask, and the platform bit (legacy cache entries, glibc <= 2.36). */
  hwcapImportant: bigint | null;
  platformBit: bigint | null;
  /**
   * x86.cpu_features.isa_1 (--list-diagnostics, glibc 2.35 and later): the CPU's ISA level bits the
   * "CPU ISA level is lower than required" check uses. Computed before GLIBC_TUNABLES apply, so it
   * can exceed the glibc-hwcaps levels searched; null when the loader does not say.
   */
  isa1: number | null;
}

const factsCache = new Map<string, HostLoaderFacts | null>();

function run(interp: string, arg: string): string | null {
  // LD_LIBRARY_PATH and LD_PRELOAD cannot change these answers; GLIBC_TUNABLES (glibc.cpu.hwcaps)
  // can, and the checked program would run with it too, so the environment is kept.
  // node:child_process on first use: the fast path (`use`, `current`) loads this module without running anything.
  const r = process.getBuiltinModule('node:child_process').spawnSync(interp, [arg], {encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore']});
  return r.status === 0 && typeof r.stdout === 'string' ? r.stdout : null;
}

/** Parses `ld.so --help` (glibc >= 2.33) and `--list-diagnostics` (>= 2.34) output. */
export function parseLoaderHelp(help: string, diagnostics: string | null): HostLoaderFacts | null {
  const section = (title: RegExp): string[] => {
    const lines = help.split('\n');
    const at = lines.findIndex((l) => title.test(l));
    if (at < 0) return [];
    const out: string[] = [];
    for (const l of lines.slice(at + 1)) {
      if (!/^\s+\S/.test(l)) break;
      out.push(l.trim());
    }
    return out;
  };
  const hw = section(/^Subdirectories of glibc-hwcaps directories/);
  if (hw.length === 0 && !/glibc-hwcaps/.test(help)) return null;
  const searched = (l: string) => /\(.*searched\)$/.test(l) && !/not searched/.test(l);
  const name = (l: string) => l.replace(/\s*\(.*\)$/, '');
  const legacyLines = section(/^Legacy HWCAP subdirectories/);
  const platformLine = legacyLines.find((l) => /AT_PLATFORM/.test(l));
  const diag = (key: string) => diagnostics ? diagnosticValue(diagnostics, key) : null;
  const platformName = quoted(diag('dl_platform')) ?? (platformLine ? name(platformLine) : null);
  const important = diag('dl_hwcap_important');
  const dlHwcap = diag('dl_hwcap');
  const platformBit = platformBitOf(diag('dl_string_platform'));
  return {
    hwcaps: hw.filter(searched).map(name),
    hwcapsKnown: hw.map(name),
    legacy: legacyLines.filter((l) => searched(l) && !/AT_PLATFORM/.test(l) && name(l) !== 'tls').map(name),
    platform: platformName,
    hwcapImportant: important !== null && dlHwcap !== null ? BigInt(important) & BigInt(dlHwcap) : null,
    platformBit,
    isa1: isa1Of(diagnostics),
  };
}

/** One `key=value` line of `ld.so --list-diagnostics`. */
function diagnosticValue(diagnostics: string, key: string): string | null {
  return new RegExp(`^${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}=(.*)$`, 'm').exec(diagnostics)?.[1] ?? null;
}

/** A diagnostics string value without its quotes (null when absent or not quoted). */
function quoted(value: string | null): string | null {
  return value !== null && /^".*"$/.test(value) ? value.slice(1, -1) : null;
}

/** dl_string_platform as the bit legacy cache entries carry (negative: no platform). */
function platformBitOf(value: string | null): bigint | null {
  if (value === null) return null;
  const v = BigInt.asIntN(64, BigInt(value));
  return v < 0n ? null : 1n << v;
}

/** x86 legacy hwcap bit names (sysdeps/x86/dl-hwcap.h), for --list-diagnostics' dl_hwcap. */
const X86_HWCAP_NAMES = ['sse2', 'x86_64', 'avx512_1'];

/**
 * The same facts from `ld.so --list-diagnostics` alone (glibc >= 2.34): dl_hwcaps_subdirs with the
 * dl_hwcaps_subdirs_active bit mask (bit i: the i-th name), dl_platform, and for glibc <= 2.36
 * the legacy names from dl_hwcap & dl_hwcap_important. One process instead of two per check.
 */
export function parseLoaderDiagnostics(diagnostics: string): HostLoaderFacts | null {
  const value = (key: string) => diagnosticValue(diagnostics, key);
  const subdirs = value('dl_hwcaps_subdirs');
  const active = value('dl_hwcaps_subdirs_active');
  if (subdirs === null || active === null || !/^".*"$/.test(subdirs)) return null;
  const known = subdirs.slice(1, -1).split(':').filter(Boolean);
  const mask = Number(BigInt(active));
  const platform = value('dl_platform');
  const important = value('dl_hwcap_important');
  const hwcap = value('dl_hwcap');
  const bits = important !== null && hwcap !== null ? BigInt(important) & BigInt(hwcap) : null;
  const version = /^"?(\d+)\.(\d+)/.exec(value('version.version') ?? '');
  const legacyEra = version !== null && versionAtMost([Number(version[1]), Number(version[2])], 2, 36);
  const platformBit = platformBitOf(value('dl_string_platform'));
  return {
    hwcaps: known.filter((_, i) => (mask & (1 << i)) !== 0),
    hwcapsKnown: known,
    legacy: legacyEra && bits !== null ? X86_HWCAP_NAMES.filter((_, i) => (bits & (1n << BigInt(i))) !== 0n) : [],
    platform: quoted(platform),
    hwcapImportant: bits,
    platformBit,
    isa1: isa1Of(diagnostics),
  };
}

function isa1Of(diagnostics: string | null): number | null {
  const value = diagnostics === null ? null : diagnosticValue(diagnostics, 'x86.cpu_features.isa_1');
  return value !== null && /^0x[0-9a-f]+$/i.test(value) ? Number(value) : null;
}

/**
 * Where the facts outlive the process (cache/loader-facts.ts): starting the loader costs more
 * than a cached check of a whole library tree. `get` answers only while what the answer depends
 * on (the loader file, the CPU, GLIBC_TUNABLES) is unchanged; undefined: ask the loader.
 */
export interface LoaderFactsStore {
  get(interp: string): HostLoaderFacts | null | undefined;
  set(interp: string, facts: HostLoaderFacts | null): void;
}

/**
 * The facts of the loader at `interp` (a host path), asked once per process (one `ld.so
 * --list-diagnostics`, a few ms; `--help` as well only for glibc 2.33), or taken from `store`;
 * null when it cannot say.
 */
export function hostLoaderFacts(interp: string, store?: LoaderFactsStore): HostLoaderFacts | null {
  if (factsCache.has(interp)) return factsCache.get(interp)!;
  let facts = store?.get(interp);
  if (facts === undefined) {
    facts = askLoader(interp);
    store?.set(interp, facts);
  }
  factsCache.set(interp, facts);
  return facts;
}

/** `--list-diagnostics` output asked in the background (prefetchHostLoaderFacts), by loader path; null: it failed. */
const prefetched = new Map<string, string | null>();
const pending = new Map<string, Promise<void>>();

/**
 * Starts `ld.so --list-diagnostics` of the loader at `interp` without waiting for it: a first
 * check (no store of loader facts) would otherwise wait for the loader (10-15 ms) after listing
 * its targets instead of during it (issue 43). hostLoaderFacts takes the answer once
 * loaderFactsSettled() has resolved; asked before, it runs the loader itself, as it always did.
 */
export function prefetchHostLoaderFacts(interp: string): void {
  if (factsCache.has(interp) || pending.has(interp)) return;
  pending.set(interp, new Promise((resolve) => {
    process.getBuiltinModule('node:child_process').execFile(interp, ['--list-diagnostics'], {encoding: 'utf8', timeout: 5000}, (error, stdout) => {
      prefetched.set(interp, error ? null : stdout);
      pending.delete(interp);
      resolve();
    });
  }));
}

/** Resolves once every prefetchHostLoaderFacts has its answer. */
export async function loaderFactsSettled(): Promise<void> {
  await Promise.all(pending.values());
}

function askLoader(interp: string): HostLoaderFacts | null {
  const diagnostics = prefetched.has(interp) ? prefetched.get(interp)! : run(interp, '--list-diagnostics');
  let facts = diagnostics === null ? null : parseLoaderDiagnostics(diagnostics);
  if (!facts) {
    const help = run(interp, '--help');
    if (help !== null) facts = parseLoaderHelp(help, diagnostics);
  }
  return facts;
}

export interface LoaderFileFacts {
  /** The glibc release [major, minor], or null when the bytes do not say. */
  version: [number, number] | null;
  /**
   * Whether the loader knows the glibc.rtld.dynamic_sort tunable, i.e. has the DFS dependency
   * sorter (upstream from 2.35, backported by some distributions to older releases).
   */
  dynamicSortTunable: boolean;
}

const fileFactsCache = new Map<string, LoaderFileFacts | null>();

/**
 * What the bytes of a loader (or libc) file say about its glibc: the release ("ld.so (...)
 * stable release version 2.36.") and the tunables compiled in, so that a sysroot's glibc is
 * known without running anything from it. Null when the file cannot be read.
 */
export function loaderFileFacts(path: string): LoaderFileFacts | null {
  if (fileFactsCache.has(path)) return fileFactsCache.get(path)!;
  let result: LoaderFileFacts | null = null;
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(size, 8 << 20));
    readSync(fd, buf, 0, buf.length, 0);
    // Searched in the bytes (memmem): a string of the whole file and a regular expression over it cost ~6 ms a check.
    let m: RegExpExecArray | null = null;
    for (let at = buf.indexOf('release version '); at >= 0 && !m; at = buf.indexOf('release version ', at + 1)) {
      m = /^release version (\d+)\.(\d+)/.exec(buf.toString('latin1', at, at + 40));
    }
    result = {version: m ? [Number(m[1]), Number(m[2])] : null, dynamicSortTunable: buf.includes('glibc.rtld.dynamic_sort')};
  } catch {
    // unreadable: unknown
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  fileFactsCache.set(path, result);
  return result;
}

/** The glibc release of a loader or libc file, read from its bytes (null: unknown). */
export function glibcVersionOfFile(path: string): [number, number] | null {
  return loaderFileFacts(path)?.version ?? null;
}

/** a <= b for [major, minor] versions. */
export function versionAtMost(v: [number, number], major: number, minor: number): boolean {
  return v[0] < major || (v[0] === major && v[1] <= minor);
}
