import {existsSync, readFileSync} from 'node:fs';
import type {CheckOptions, FileVerdict} from './report-types.js';
import {runtimeEnvOf} from './runtime/runtime-env.js';
import {noteFoundElsewhere} from './explain/found-elsewhere.js';
import {FileView} from './cache/file-cache.js';
import {loadLdCache} from './read/ldcache/load.js';
import {lookupCache} from './read/ldcache/lookup.js';
import {loaderPlatform, type LoaderPlatform} from './read/machine/platform.js';
import {loaderFactsSettled} from './read/ldcache/host-loader.js';
import type {LoaderContext, PreloadEntry} from './search/loader-process.js';
import type {ListedFile} from './search/list-targets.js';
import {InputRecorder, inodeKey} from './cache/inputs.js';
import {normalRoot} from './read/machine/sysroot.js';
import {noexecMountOf, noexecMountPoints} from './read/machine/mounts.js';
import {kernelDriverVersion, nvidiaModuleLoaded} from './read/machine/nvidia-driver.js';
import {VerdictCache} from './cache/verdict-cache.js';
import type {ReportFacts} from './cache/report-memo.js';
import {LoaderFactsFile} from './cache/loader-facts.js';
import {growYoungGenerationFast} from '../heap-flags.js';
import {splitLdLibraryPath} from './search/search-path.js';

/**
 * The check of a share of the listed files, in this thread or in a worker: each file read,
 * modelled as its own process, checked and explained. Results are plain data, one per file,
 * so shares computed apart merge into the same report as one computed at once.
 */
export interface IndexedFile extends ListedFile {
  /** Position in the whole listing (results are merged in this order). */
  index: number;
}

/** A FileVerdict with its place in the listing. */
export interface FileResult extends FileVerdict {
  index: number;
}

/** LD_PRELOAD is split on spaces and colons (rtld.c handle_preload_list); /etc/ld.so.preload also on tabs and newlines, with # comments. */
function preloadList(options: CheckOptions, recorder: InputRecorder | null): PreloadEntry[] {
  const list: PreloadEntry[] = (options.preload ?? []).flatMap((p) => p.split(/[ :]/)).filter(Boolean).map((name) => ({name, from: 'LD_PRELOAD'}));
  const file = `${normalRoot(options.sysroot)}/etc/ld.so.preload`;
  if (recorder ? recorder.statNow(file) !== null : existsSync(file)) {
    try {
      const text = readFileSync(file, 'utf8').replace(/#[^\n]*/g, '');
      list.push(...text.split(/[ \t\n:]+/).filter(Boolean).map((name) => ({name, from: '/etc/ld.so.preload' as const})));
    } catch {
      // unreadable: ld.so ignores it too
    }
  }
  return list;
}

export function makeContext(options: CheckOptions, cwd: string, recorder: InputRecorder | null = null): LoaderContext {
  const sysroot = normalRoot(options.sysroot);
  const cacheFile = options.cacheFile ?? `${sysroot}/etc/ld.so.cache`;
  // Its identity before its contents: a cache rebuilt after this is seen by the next check.
  recorder?.statNow(cacheFile);
  // Read on first use (every process needs it, and its generator string names the glibc
  // version): a check answered from the verdict cache never reads it.
  let ldCache: ReturnType<typeof loadLdCache> | undefined;
  const cache = () => (ldCache ??= loadLdCache(cacheFile));
  // What the host's loader says it searches, kept beside the verdicts: a cached check starts no process.
  const factsStore = options.cacheDir ? new LoaderFactsFile(options.cacheDir) : undefined;
  // The same few hundred names are looked up by every process of a check: answered once each.
  const answers = new Map<LoaderPlatform, Map<string, string | null>>();
  const view = new FileView(cwd, sysroot);
  view.recorder = recorder;
  const platforms = new Map<string, string>();
  // The same object for every process: lookups are memoised per platform.
  const sized = new Map<LoaderPlatform, LoaderPlatform>();
  const withPageSize = (platform: LoaderPlatform | null): LoaderPlatform | null => {
    if (!platform || options.pageSize === undefined) return platform;
    let p = sized.get(platform);
    if (!p) sized.set(platform, p = {...platform, pageSize: options.pageSize});
    return p;
  };
  return {
    view,
    ...(options.pageSize !== undefined ? {pageSizeGiven: true} : {}),
    platformFor(elfClass, machine) {
      const platform = withPageSize(loaderPlatform(elfClass, machine, sysroot, () => cache().generator, factsStore));
      if (recorder) {
        const key = `${elfClass}:${machine}`;
        let value = platforms.get(key);
        if (value === undefined) platforms.set(key, value = platformText(platform));
        recorder.fact('p', key, value);
      }
      return platform;
    },
    ldLibraryPath: options.ldLibraryPath,
    // Every process of the check searches the same lists for the same names (search/loader-process.ts search).
    searchMemo: new Map(),
    runtimeEnv: runtimeEnvOf(options.runtimeEnv ?? process.env),
    tunables: tunablesOf(options),
    bindNow: bindNowOf(options),
    // Mount flags are this machine's: an image under CUDAENV_SYSROOT runs elsewhere.
    ...(sysroot === '' ? {noexecMount: noexecMountOf} : {}),
    preload: preloadList(options, recorder),
    cacheLabel: `ld.so.cache (${cacheFile})`,
    cacheLookup(name: string, platform: LoaderPlatform): string | null {
      let known = answers.get(platform);
      if (!known) answers.set(platform, known = new Map());
      let answer = known.get(name);
      if (answer === undefined) {
        const hwcapsSubdirs = platform.hwcapsSubdirs.filter((s) => s.startsWith('glibc-hwcaps/')).map((s) => s.slice('glibc-hwcaps/'.length));
        // The ISA level the cache entries are filtered by is the one the loader searches.
        const isaLevel = Math.max(1, ...hwcapsSubdirs.map((s) => Number(/^x86-64-v(\d)$/.exec(s)?.[1] ?? 1)));
        const hit = lookupCache(cache(), name, {elfClass: platform.elfClass, machine: platform.machine, hwcapsSubdirs, isaLevel, legacyHwcap: platform.legacyHwcap});
        answer = hit ? sysroot + hit : null;
        known.set(name, answer);
      }
      return answer;
    },
  };
}

/**
 * Each file's result: from the verdict cache when everything it rested on reads the same (no
 * table of it is read then, nor the --exe program's), else checked. Bad usage (a file named
 * explicitly that is not a library, an --exe that is no program) fails before any file is
 * checked; a file answered from the cache was one, and is one still (its identity is unchanged).
 */
export async function checkFiles(options: CheckOptions, files: IndexedFile[], known?: Map<string, string>, facts?: ReportFacts): Promise<FileResult[]> {
  const cwd = options.cwd ?? process.cwd();
  const recorder = options.cacheDir ? new InputRecorder() : null;
  const ctx = makeContext(options, cwd, recorder);
  const cache = options.cacheDir ? openCache(options, cwd, ctx) : null;
  const ordered = [...files].sort((a, b) => a.index - b.index);
  const nameOf = (file: IndexedFile): string => (file.file === undefined ? file.path : `${file.path}\0${file.file}`);
  const hits = new Map<IndexedFile, FileVerdict>();
  if (cache) {
    for (const file of ordered) {
      const hit = cache.lookup(nameOf(file), file.explicit);
      if (hit) hits.set(file, hit);
    }
  }
  const misses = ordered.filter((f) => !hits.has(f));
  // The model itself (reading, search, bind, run-time loads, explanations) only where a file must
  // be checked: a check the cache answers whole loads none of it (issue 42: a cached check is
  // most of its time starting).
  const model = misses.length > 0 || ordered.length === 0 ? await import('./check-one.js') : null;
  if (misses.length > 0) growYoungGenerationFast();
  for (const file of misses) if (file.explicit) model!.readListedSync(file);
  // With nothing to check, a bad --exe is still bad usage.
  const exe = model ? await model.readExe(options, cwd, recorder) : undefined;
  // Objects read with {symbols: 'undefined'} (all of them here) are looked up through their own
  // hash tables: no index of referenced names is needed (null: objects without one index all).
  const memo = model ? new model.SymbolMemo(null) : null;
  // The host loader's answer, asked while the targets were listed (check.ts), before the first process needs it.
  if (model) await loaderFactsSettled();
  const explainCtx = {ldLibraryPath: options.ldLibraryPath, storeVersionsDir: options.storeVersionsDir, cwd};
  const own: FileResult[] = [];
  // Each file read, loaded as a process, checked and explained before the next one, so that its
  // process (thousands of objects, edges and candidates over a directory) is garbage at once
  // instead of living through the whole check. The reader and the loader model are synchronous:
  // the reads come from the page cache, and a promise per file and search step cost more than
  // overlapping them could save.
  for (const file of ordered) {
    const name = nameOf(file);
    const hit = hits.get(file);
    if (hit) {
      own.push({index: file.index, ...hit});
      continue;
    }
    recorder?.begin();
    const result = await model!.checkOne(file, ctx, exe, memo!, explainCtx, recorder, options.runtimeLoads !== false);
    const inputs = recorder?.end();
    if (cache && inputs) cache.store(name, inputs, recorder!.shared, result, file.explicit);
    own.push({index: file.index, ...result});
  }
  // For the report's one object per file, by (device, inode): what the cache found unchanged, the
  // files listed and every file the search stat'ed (outside a sysroot, the paths the report names).
  if (known) {
    if (cache) for (const [path, id] of cache.unchangedFiles()) known.set(path, id);
    for (const f of files) if (f.stat && f.file === undefined) known.set(f.path, inodeKey(f.stat));
    for (const [path, st] of ctx.view.statsMade()) known.set(path, inodeKey(st));
  }
  // What a kept report rests on (./cache/report-memo.ts): every file's verdict as the cache holds it.
  if (facts) {
    for (const file of ordered) {
      const own = cache?.factsOf(nameOf(file));
      if (own) facts.addFacts(own);
      else facts.complete = false;
    }
  }
  cache?.save();
  // After the cache has what each file's own process gave: this depends on the other files checked.
  const results = noteFoundElsewhere(own, options.sysroot, facts);
  // An object in the processes of several files is reported once, as the first file in listing
  // order found it (the merge keeps the first occurrence): later files skip describing it.
  // `startup` counts the program's start among the objects, so it counts what is kept of them
  // (else the first objects of the dlopen took their place, and the merge put a later file's
  // failure first: issue 37).
  const described = new Set<string>();
  for (const r of results) {
    let startup = r.startup;
    r.objects = r.objects.filter((o, i) => {
      if (!described.has(o.path)) {
        described.add(o.path);
        return true;
      }
      if (startup !== undefined && i < r.startup!) startup--;
      return false;
    });
    if (startup !== undefined) r.startup = startup;
  }
  return results;
}

/** GLIBC_TUNABLES as the checked program would see it. */
function tunablesOf(options: CheckOptions): string | undefined {
  return 'glibcTunables' in options ? options.glibcTunables : process.env.GLIBC_TUNABLES;
}

/** LD_BIND_NOW as the checked program would see it: ld.so binds immediately when it is set to anything but "". */
function bindNowOf(options: CheckOptions): boolean {
  return options.bindNow ?? (process.env.LD_BIND_NOW ?? '') !== '';
}

/** A platform as a fact's value (its hwcap masks are bigints). */
function platformText(platform: LoaderPlatform | null): string {
  return JSON.stringify(platform ?? null, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
}

/**
 * Whether the options name something relative to the working directory: an empty or relative
 * LD_LIBRARY_PATH entry, an LD_PRELOAD path without a leading slash, a relative --exe. (A
 * relative path found inside a file, an RPATH entry or a DT_NEEDED name, is a recorded fact:
 * FileView.workingDir.) Otherwise the same check from another directory is the same check.
 */
function cwdMatters(options: CheckOptions): boolean {
  const relative = (p: string) => !p.startsWith('/');
  return splitLdLibraryPath(options.ldLibraryPath).some(relative)
    || (options.preload ?? []).flatMap((p) => p.split(/[ :]/)).some((p) => p.includes('/') && relative(p))
    || (options.exe !== undefined && relative(options.exe));
}

function openCache(options: CheckOptions, cwd: string, ctx: LoaderContext): VerdictCache {
  return new VerdictCache({dir: options.cacheDir!, key: verdictKey(options, cwd), sysroot: normalRoot(options.sysroot), cwd, platform: platformAnswer(ctx)});
}

/**
 * What every result depends on besides the recorded facts. GLIBC_TUNABLES can change the hwcaps
 * the loader searches, the order it relocates in and whether an executable stack is allowed; the
 * platform itself is a recorded fact.
 */
export function verdictKey(options: CheckOptions, cwd: string): Record<string, unknown> {
  const sysroot = normalRoot(options.sysroot);
  return {
    cwd: cwdMatters(options) ? cwd : null, sysroot, ldLibraryPath: options.ldLibraryPath ?? null, preload: options.preload ?? [], exe: options.exe ?? null,
    cacheFile: options.cacheFile ?? null, storeVersionsDir: options.storeVersionsDir ?? null,
    tunables: tunablesOf(options) ?? null, bindNow: bindNowOf(options), pageSize: options.pageSize ?? null, runtimeLoads: options.runtimeLoads !== false,
    // NCCL_NET_PLUGIN and the plugin directories' variables change what is loaded later.
    runtimeEnv: runtimeEnvOf(options.runtimeEnv ?? process.env),
    // A file system remounted noexec (or exec) changes what loads without changing any file.
    noexec: sysroot === '' ? noexecMountPoints() : [],
    // Whether an NVIDIA kernel module is loaded, and which: a libcuda.so.1 nothing provides is a
    // warning without one and an error with one, and its fix names the module's release.
    nvidiaModule: nvidiaModuleLoaded(sysroot) ? kernelDriverVersion(sysroot) ?? 'loaded' : null,
  };
}

/** A recorded platform fact's value now ('class:machine' -> the loader platform as text). */
export function platformAnswer(ctx: LoaderContext): (key: string) => string {
  return (key) => {
    const [elfClass, machine] = key.split(':').map(Number);
    return platformText(ctx.platformFor(elfClass as 32 | 64, machine));
  };
}

