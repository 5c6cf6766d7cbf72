/**
 * The loader model's public API (`cudaenv check`, switching, conda hooks, `link`, `doctor`).
 *
 *   const report = await checkLibraries({targets: ['/usr/local/cuda/lib64'], ldLibraryPath: process.env.LD_LIBRARY_PATH});
 *   if (!report.ok) console.error(firstProblemLine(report));
 *
 * Every checked library is modelled as its own process, the way `ldd` runs it (the library as
 * the main object), or dlopened by `exe` when given. Layers: ./targets (what to check),
 * ./resolver (which file each DT_NEEDED binds, §1), ./checker (what fails, §3),
 * ./explainer (why, and the fix). See docs/check.md and shared/docs/elf-loader-spec.md.
 */
import {existsSync, readFileSync} from 'node:fs';
import {resolve} from 'node:path';
import {UsageError} from '../errors.js';
import type {CheckedObject, CheckOptions, CheckReport, NeededEdge, Problem} from './api.js';
import {findProblems, isFailing, referencedNames, SymbolMemo} from './checker.js';
import {explain} from './explainer.js';
import {cachedElf, FileView, limiter} from './file-cache.js';
import {loadLdCache} from './ldcache/load.js';
import {lookupCache} from './ldcache/lookup.js';
import {loaderPlatform, type LoaderPlatform} from './platform.js';
import {LoaderProcess, type LoaderContext} from './resolver.js';
import {expandTargets, type TargetFile} from './targets.js';

export type {CheckOptions, CheckReport, CheckedObject, NeededEdge, Problem, ProblemKind, Via} from './api.js';
export {elfSharedObjectsIn} from './targets.js';
export {describeObject} from './explainer.js';

const KIND_ORDER = {'not-found': 0, 'version-not-found': 1, 'undefined-symbol': 2, 'unversioned-undefined-symbol': 3} as const;

/** LD_PRELOAD is split on spaces and colons (rtld.c handle_preload_list); /etc/ld.so.preload also on tabs and newlines, with # comments. */
function preloadList(options: CheckOptions): string[] {
  const list = (options.preload ?? []).flatMap((p) => p.split(/[ :]/)).filter(Boolean);
  const file = `${(options.sysroot ?? '').replace(/\/+$/, '')}/etc/ld.so.preload`;
  if (existsSync(file)) {
    try {
      const text = readFileSync(file, 'utf8').replace(/#[^\n]*/g, '');
      list.push(...text.split(/[ \t\n:]+/).filter(Boolean));
    } catch {
      // unreadable: ld.so ignores it too
    }
  }
  return list;
}

function makeContext(options: CheckOptions, cwd: string): LoaderContext {
  const sysroot = (options.sysroot ?? '').replace(/\/+$/, '');
  const cacheFile = options.cacheFile ?? `${sysroot}/etc/ld.so.cache`;
  // Loaded up front: every process needs it, and its generator string names the glibc version.
  const cache = loadLdCache(cacheFile);
  return {
    view: new FileView(cwd),
    platformFor: (elfClass, machine) => loaderPlatform(elfClass, machine, sysroot, cache.generator),
    ldLibraryPath: options.ldLibraryPath,
    preload: preloadList(options),
    cacheLabel: `ld.so.cache (${cacheFile})`,
    cacheLookup(name: string, platform: LoaderPlatform): string | null {
      const hwcapsSubdirs = platform.hwcapsSubdirs.filter((s) => s.startsWith('glibc-hwcaps/')).map((s) => s.slice('glibc-hwcaps/'.length));
      const hit = lookupCache(cache, name, {elfClass: platform.elfClass, machine: platform.machine, hwcapsSubdirs});
      return hit ? sysroot + hit : null;
    },
  };
}

/** Models the loader for every target and reports what would fail, with explanations. */
export async function checkLibraries(options: CheckOptions): Promise<CheckReport> {
  const cwd = options.cwd ?? process.cwd();
  const {files, skipped} = await expandTargets(options.targets, {recursive: options.recursive, cwd});
  const ctx = makeContext(options, cwd);
  let exe: TargetFile | undefined;
  if (options.exe) {
    const path = resolve(cwd, options.exe);
    const st = ctx.view.statSync(path);
    if (!st || !st.isFile()) throw new UsageError(`--exe ${options.exe}: no such file`, 'Give the program that loads the libraries, e.g. --exe "$(command -v python3)".');
    try {
      exe = {path, stat: st, info: await cachedElf(path, st)};
    } catch (error) {
      throw new UsageError(`--exe ${options.exe} is not an ELF program: ${error instanceof Error ? error.message : String(error)}`, 'Give the interpreter binary itself, not a wrapper script.');
    }
  }
  const objects = new Map<string, CheckedObject>();
  const problems = new Map<string, Problem>();
  const failedPreloads = new Set<string>();
  const perTarget = limiter(4);
  // 1. Every process is loaded (concurrently: their file reads overlap).
  const loaded = await Promise.all(files.map((target) => perTarget(async () => {
    const head = exe?.info ?? target.info;
    const platform = ctx.platformFor(head.elfClass, head.machine);
    if (!platform) return {target, skip: `no loader model for ELF class ${head.elfClass}, machine ${head.machine}`};
    if (exe && (target.info.elfClass !== exe.info.elfClass || target.info.machine !== exe.info.machine)) {
      return {target, skip: `built for another ELF class or machine than ${exe.path}`};
    }
    const p = new LoaderProcess(ctx, platform);
    await p.run(target, exe);
    return {target, process: p};
  })));
  // 2. Checked, knowing every referenced name (definitions are indexed for those only).
  const processes = loaded.flatMap((r) => ('process' in r && r.process ? [r.process] : []));
  const memo = new SymbolMemo(referencedNames(processes));
  const explainCtx = {ldLibraryPath: options.ldLibraryPath, storeVersionsDir: options.storeVersionsDir};
  const results = await Promise.all(loaded.map((r) => perTarget(async () => {
    if (!('process' in r) || !r.process) return r;
    const found = findProblems(r.process, memo);
    return {...r, problems: await Promise.all(found.map((f) => explain(r.process!, f, explainCtx)))};
  })));
  const checked: string[] = [];
  for (const r of results) {
    if (!('process' in r) || !r.process) {
      skipped.push({path: r.target.path, reason: r.skip!});
      continue;
    }
    const p = r.process;
    checked.push(p.target.path);
    for (const f of p.failedPreloads) failedPreloads.add(`${f.name}: ${f.reason}`);
    for (const obj of p.scope) {
      if (obj.role === 'interp' || objects.has(obj.path)) continue;
      const needed: NeededEdge[] = obj.edges.map((e) => {
        const edge: NeededEdge = {name: e.name, path: e.object?.path ?? null, via: e.via, rule: e.rule};
        if (e.passedOver.length > 0) edge.passedOver = e.passedOver.map((c) => ({path: c.path, reason: c.reason ?? c.status}));
        return edge;
      });
      objects.set(obj.path, {path: obj.path, soname: obj.info.soname, needed});
    }
    for (const problem of r.problems ?? []) {
      const key = [problem.kind, problem.object, problem.library, problem.version, problem.symbol].join('\0');
      if (!problems.has(key)) problems.set(key, problem);
    }
  }
  for (const f of failedPreloads) skipped.push({path: f, reason: 'LD_PRELOAD entry cannot be preloaded: ignored (as ld.so does)'});
  const list = [...problems.values()].sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
  return {
    ok: !list.some((p) => isFailing(p.kind, options.strict ?? false)),
    checked,
    objects: [...objects.values()],
    problems: list,
    skipped,
  };
}

/**
 * One line for a prompt or a hook: "all N libraries resolve", or the first failing problem with
 * its fix ("this LD_LIBRARY_PATH makes torch's libcusparse.so.12 bind ..., which lacks ...; run `...`").
 */
export function firstProblemLine(report: CheckReport, options: {strict?: boolean} = {}): string {
  const strict = options.strict ?? false;
  const first = report.problems.find((p) => isFailing(p.kind, strict || !report.ok));
  if (!first || (report.ok && !strict)) {
    const n = report.checked.length;
    const notes = report.problems.length;
    return `all ${n} ${n === 1 ? 'library resolves' : 'libraries resolve'}${notes > 0 ? ` (${notes} unversioned undefined symbol${notes === 1 ? '' : 's'} left to the loading program)` : ''}`;
  }
  return first.fix ? `${first.summary}; ${first.fix}` : first.summary;
}
