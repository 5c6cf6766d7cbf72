import {existsSync, readFileSync} from 'node:fs';
import {resolve} from 'node:path';
import {UsageError} from '../errors.js';
import type {CheckedObject, CheckOptions, FileVerdict, NeededEdge} from './report-types.js';
import {findProblems, loadStop, type LoadStop} from './bind/find-problems.js';
import {SymbolMemo} from './bind/symbol-memo.js';
import {explain, markNoDriverConsequences} from './explain/explain-finding.js';
import {explainPinnedPairs, explainRuntimeLoads, explainStartLibcuda} from './explain/runtime-problems.js';
import {pinnedPairs, startLibcudaChecks} from './runtime/release-checks.js';
import {declaredLoads, runtimeLoads, type RuntimeLoad} from './runtime/runtime-loads.js';
import {runtimeEnvOf} from './runtime/families.js';
import {noteFoundElsewhere} from './explain/found-elsewhere.js';
import {cachedElf, FileView} from './cache/file-cache.js';
import {loadLdCache} from './read/ldcache/load.js';
import {lookupCache} from './read/ldcache/lookup.js';
import {loaderPlatform, type LoaderPlatform} from './read/machine/platform.js';
import {LoaderProcess, type LoadedObject, type LoaderContext, type PreloadEntry} from './search/loader-process.js';
import {readListedSync, type ListedFile, type TargetFile} from './search/check-targets.js';
import {InputRecorder} from './cache/inputs.js';
import {inImage, isInside, normalRoot} from './read/machine/sysroot.js';
import {noexecMountOf, noexecMountPoints} from './read/machine/mounts.js';
import {kernelDriverVersion, nvidiaModuleLoaded} from './read/machine/nvidia-driver.js';
import {VerdictCache} from './cache/verdict-cache.js';
import {LoaderFactsFile} from './cache/loader-facts.js';
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

/** The program of --exe, read; a usage error when it is missing or not ELF. */
export async function readExe(options: CheckOptions, cwd: string, recorder: InputRecorder | null = null): Promise<TargetFile | undefined> {
  if (!options.exe) return undefined;
  // One rule with LD_LIBRARY_PATH and LD_PRELOAD: under CUDAENV_SYSROOT an absolute path names the
  // image's file (/usr/bin/python3.13), one already under the image's root is taken as it is, and
  // links inside the image resolve in it.
  const root = normalRoot(options.sysroot);
  const path = options.exe.startsWith('/') ? inImage(root, options.exe) : resolve(cwd, options.exe);
  const view = new FileView(cwd, root);
  view.recorder = recorder;
  const st = view.statSync(path);
  if (!st || !st.isFile()) {
    throw new UsageError(`--exe ${options.exe}: no such file${path !== options.exe && isInside(root, path) ? ` in the image (${path})` : ''}`,
      'Give the program that loads the libraries, e.g. --exe "$(command -v python3)".');
  }
  try {
    return {path, stat: st, info: await cachedElf(view.hostPath(path) ?? path, st)};
  } catch (error) {
    throw new UsageError(`--exe ${options.exe} is not an ELF program: ${error instanceof Error ? error.message : String(error)}`, 'Give the interpreter binary itself, not a wrapper script.');
  }
}

/** `stop`: where the loader stops while mapping (loadStop), if it does. */
function toCheckedObject(obj: LoadedObject, stop: LoadStop | null): CheckedObject {
  const needed: NeededEdge[] = obj.edges.map((e) => {
    if (stop && !stop.reached.has(e)) {
      const never: NeededEdge = {name: e.name, path: null, via: null, rule: null, reached: false};
      if (e.kind !== 'needed') never.filter = e.kind;
      return never;
    }
    const edge: NeededEdge = {name: e.name, path: e.object?.path ?? null, via: e.via, rule: e.rule};
    if (e.passedOver.length > 0) edge.passedOver = e.passedOver.map((c) => ({path: c.path, reason: c.reason ?? c.status}));
    if (e.kind !== 'needed') edge.filter = e.kind;
    if (stop && e === stop.edge) edge.error = stop.error;
    return edge;
  });
  return {path: obj.path, soname: obj.info.soname, needed};
}

/**
 * The objects of the process as the loader leaves them: none mapped after it stopped, nor the one
 * it stopped at. The main object and the LD_PRELOAD objects are mapped before any DT_NEEDED entry
 * (they begin the list mergeResults takes the program's start from).
 */
function checkedObjects(p: LoaderProcess, stop: LoadStop | null): {objects: CheckedObject[]; startup: number} {
  const mapped = stop && !p.mainStop && stop.at >= 0
    ? new Set([p.main, ...p.preloadEdges.map((e) => e.object), ...[...stop.reached].filter((e) => e !== stop.edge).map((e) => e.object)])
    : stop ? new Set([p.main]) : null;
  const objects: CheckedObject[] = [];
  // The process's start-up objects are a prefix of its scope, so those listed are a prefix of
  // `objects`: counted here, as they are listed, for the merge's ordering (FileResult.startup).
  let startup = 0;
  p.scope.forEach((o, i) => {
    if (o.role === 'interp' || (mapped && !mapped.has(o))) return;
    objects.push(toCheckedObject(o, stop));
    if (i < p.startupScopeLength) startup++;
  });
  return {objects, startup};
}

/**
 * Each file's result: from the verdict cache when everything it rested on reads the same (no
 * table of it is read then, nor the --exe program's), else checked. Bad usage (a file named
 * explicitly that is not a library, an --exe that is no program) fails before any file is
 * checked; a file answered from the cache was one, and is one still (its identity is unchanged).
 */
export async function checkFiles(options: CheckOptions, files: IndexedFile[]): Promise<FileResult[]> {
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
  for (const file of misses) if (file.explicit) readListedSync(file);
  // With nothing to check, a bad --exe is still bad usage.
  const exe = misses.length > 0 || ordered.length === 0 ? await readExe(options, cwd, recorder) : undefined;
  // Objects read with {symbols: 'undefined'} (all of them here) are looked up through their own
  // hash tables: no index of referenced names is needed (null: objects without one index all).
  const memo = new SymbolMemo(null);
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
    const result = await checkOne(file, ctx, exe, memo, explainCtx, recorder, options.runtimeLoads !== false);
    const inputs = recorder?.end();
    if (cache && inputs) cache.store(name, inputs, recorder!.shared, result, file.explicit);
    own.push({index: file.index, ...result});
  }
  cache?.save();
  // After the cache has what each file's own process gave: this depends on the other files checked.
  const results = noteFoundElsewhere(own, options.sysroot);
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
  const sysroot = normalRoot(options.sysroot);
  return new VerdictCache({
    dir: options.cacheDir!,
    // What every result depends on besides the recorded facts. GLIBC_TUNABLES can change the
    // hwcaps the loader searches, the order it relocates in and whether an executable stack is
    // allowed; the platform itself is a recorded fact.
    key: {
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
    },
    sysroot,
    cwd,
    platform(key) {
      const [elfClass, machine] = key.split(':').map(Number);
      return platformText(ctx.platformFor(elfClass as 32 | 64, machine));
    },
  });
}

/**
 * The checked file's process once started, before anything is dlopened: as `ldd` starts it (the
 * file the main object), or with --exe the program with the file already loaded. The file then
 * comes in as a preload does, after the program: for a later dlopen by one of its objects the
 * search is the same (dl-open.c searches the caller's paths, then the program's DT_RPATH), and
 * so is the global scope the new objects bind in.
 */
function startOf(ctx: LoaderContext, platform: LoaderPlatform, target: TargetFile, exe?: TargetFile): LoaderProcess {
  if (!exe) {
    const q = new LoaderProcess(ctx, platform);
    q.run(target);
    return q;
  }
  const q = new LoaderProcess({...ctx, preload: [...ctx.preload, {name: target.path, from: 'LD_PRELOAD'}]}, platform);
  q.run(exe);
  return q;
}

/** Each run-time load as an edge of the object that makes it, after its DT_NEEDED edges. */
function addRuntimeEdges(objects: CheckedObject[], loads: RuntimeLoad[], declared: ReturnType<typeof declaredLoads>): void {
  // Every load in the shape of ELF dlopen metadata, so packagers can declare what cudaenv read.
  for (const {caller, loads: theirs} of declared) {
    const object = objects.find((o) => o.path === caller.path);
    if (!object) continue;
    object.runtimeLoads = theirs.map((l) => ({soname: l.names, ...(l.feature ? {feature: l.feature} : {}), description: l.description, priority: l.priority, source: l.source, ...(l.template ? {template: true} : {}), ...(l.plugin ? {plugin: l.plugin} : {})}));
  }
  for (const load of loads) {
    const caller = objects.find((o) => o.path === load.caller.path);
    if (!caller) continue;
    const e = load.edge;
    caller.needed.push({name: load.name, path: e.object?.path ?? null, via: e.via, rule: e.rule,
      ...(e.error ? {error: e.error} : {}), dlopen: {when: load.role.when, impact: load.role.impact}});
  }
}

/** One listed file: read, modelled as its own process, checked and explained (objects not yet deduplicated). */
async function checkOne(
  file: IndexedFile, ctx: LoaderContext, exe: TargetFile | undefined, memo: SymbolMemo,
  explainCtx: {ldLibraryPath?: string; storeVersionsDir?: string; cwd: string}, recorder: InputRecorder | null, followRuntimeLoads: boolean,
): Promise<FileVerdict> {
  const base = {objects: [], problems: [], failedPreloads: []};
  // The file's identity before it is read.
  recorder?.statNow(file.file ?? file.path);
  const r = readListedSync(file);
  if ('skip' in r) return {...base, skipped: {path: file.path, reason: r.skip}};
  const head = exe?.info ?? r.info;
  const platform = ctx.platformFor(head.elfClass, head.machine);
  if (!platform) return {...base, skipped: {path: file.path, reason: `no loader model for ELF class ${head.elfClass}, machine ${head.machine}`}};
  if (exe && (r.info.elfClass !== exe.info.elfClass || r.info.machine !== exe.info.machine)) {
    return {...base, skipped: {path: file.path, reason: `built for another ELF class or machine than ${exe.path}`}};
  }
  const p = new LoaderProcess(ctx, platform);
  p.run(r, exe);
  const stop = loadStop(p);
  const found = findProblems(p, memo, stop);
  const {objects, startup} = checkedObjects(p, stop);
  const problems = await Promise.all(found.map((f) => explain(p, f, explainCtx)));
  markNoDriverConsequences(problems);
  if (stop === null && followRuntimeLoads) {
    // What the libraries load later with dlopen, each load modelled after the checked file's start.
    const started = exe ? startOf(ctx, platform, r, exe) : p;
    const loads = runtimeLoads(started, () => startOf(ctx, platform, r, exe), memo);
    addRuntimeEdges(objects, loads, declaredLoads(started));
    problems.push(...explainPinnedPairs(p, pinnedPairs(p), explainCtx, platform.sysroot));
    const judged = new Set(loads.flatMap((l) => l.checks.filter((c) => c.kind === 'cuda-stub' || c.kind === 'driver-mismatch').map((c) => c.object.inode)));
    problems.push(...explainStartLibcuda(p, startLibcudaChecks(p, judged), explainCtx, platform.sysroot));
    problems.push(...await explainRuntimeLoads(loads, explainCtx, platform.sysroot));
  }
  return {
    checked: p.target.path,
    objects,
    ...(p.dlopenEdge ? {startup} : {}),
    problems,
    // "NAME: REASON"; an entry of /etc/ld.so.preload carries that file before a NUL (mergeResults words it).
    failedPreloads: p.failedPreloads.map((f) => `${f.from === 'LD_PRELOAD' ? '' : `${f.from}\0`}${f.name}: ${f.reason}`),
  };
}
