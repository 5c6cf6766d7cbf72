/**
 * One listed file that the verdict cache could not answer: read, modelled as its own process,
 * checked and explained. check-files.ts loads this file only then, so that a check answered from
 * the cache loads none of the model's later stages (search, bind, runtime, explain).
 */
import {resolve} from 'node:path';
import {UsageError} from '../errors.js';
import type {CheckedObject, CheckOptions, FileVerdict, NeededEdge} from './report-types.js';
import {findProblems, loadStop, type LoadStop} from './bind/find-problems.js';
import {SymbolMemo} from './bind/symbol-memo.js';
import {explain, markNoDriverConsequences} from './explain/explain-finding.js';
import {explainPinnedPairs, explainRuntimeLoads, explainStartLibcuda} from './explain/runtime-problems.js';
import {pinnedPairs, startLibcudaChecks} from './runtime/release-checks.js';
import {declaredLoads, runtimeLoads, type RuntimeLoad} from './runtime/runtime-loads.js';
import {cachedElf, FileView} from './cache/file-cache.js';
import type {LoaderPlatform} from './read/machine/platform.js';
import {LoaderProcess, type LoadedObject, type LoaderContext} from './search/loader-process.js';
import {readListedSync, type TargetFile} from './search/check-targets.js';
import type {ListedFile} from './search/list-targets.js';
import type {InputRecorder} from './cache/inputs.js';
import {inImage, isInside, normalRoot} from './read/machine/sysroot.js';

export {SymbolMemo, readListedSync};

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
export async function checkOne(
  file: ListedFile, ctx: LoaderContext, exe: TargetFile | undefined, memo: SymbolMemo,
  explainCtx: {ldLibraryPath?: string; storeVersionsDir?: string; cwd: string}, recorder: InputRecorder | null, followRuntimeLoads: boolean,
): Promise<FileVerdict> {
  const base = {objects: [], problems: [], failedPreloads: []};
  // The file's identity before it is read (recorded).
  const r = readListedSync(file, recorder);
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
