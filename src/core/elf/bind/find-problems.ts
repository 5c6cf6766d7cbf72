import type {ProblemKind} from '../report-types.js';
import type {Edge, LoadedObject, LoaderProcess} from '../search/loader-process.js';
import {definesVersion, references} from './symbols.js';
import {lookedUpNames} from '../cache/file-cache.js';
import {copyProblems, staticTlsBlockOf, staticTlsProblems} from './relocation-problems.js';
import {staticTlsModelled, type StaticTlsBlock} from './static-tls.js';
import {versionAtMost} from '../read/ldcache/host-loader.js';
import {relocationOrder, searchList} from './relocation-order.js';
import {asksExecStack, execStackForbidden, execStackTunable} from '../search/exec-stack.js';
import {stopsAtVersionFile, versionFileStops} from './version-file-stop.js';
import {checkMatchAborts} from './check-match.js';
import type {Finding} from './finding.js';
import type {ElfInfo, ElfVersionNeed} from '../read/elf/types.js';
import type {SymbolMemo} from './symbol-memo.js';

/** Every edge in the order ld.so maps it: with --exe, the dlopen's after the program's start-up ones. */
function mappingOrder(p: LoaderProcess): Edge[] {
  return p.dlopenEdge ? [...p.edgeOrder.slice(0, p.dlopenAt), p.dlopenEdge, ...p.edgeOrder.slice(p.dlopenAt)] : p.edgeOrder;
}

/** Where the load ends before anything is relocated (LoadStop.edge null: at the main object itself). */
export interface LoadStop {
  /** The edges the loader gets to (the stopping one included): the rest are never searched, and what they would load is never mapped. */
  reached: Set<Edge>;
  edge: Edge | null;
  /** The loader's message: "PATH: file too short", "NAME: cannot enable executable stack as shared object requires: Invalid argument". */
  error: string;
  /** The index of `edge` in mappingOrder(p). */
  at: number;
}

/**
 * Where the loader stops while mapping, or null. A library found nowhere gets a stand-in in trace
 * mode and the load goes on (dl-load.c); a file the loader cannot load, or an object asking for an
 * executable stack the loader may not make (GLIBC_TUNABLES=glibc.rtld.execstack=0; a dlopen from
 * glibc 2.41), is an error it signals, in trace mode too: nothing after it is mapped,
 * version-checked or relocated (a dlopen's failure leaves the program's start as it was).
 */
export function loadStop(p: LoaderProcess): LoadStop | null {
  if (p.mainStop) return {reached: new Set(), edge: null, error: p.mainStop.error ?? '', at: -1};
  const forbid = execStackForbidden(p.ctx.tunables, p.platform.glibc);
  // The main object comes first: the kernel mapped the program (rtld stops with "Fatal glibc
  // error: executable stack is not allowed" before loading anything), or ld.so mapped the library
  // it was asked to trace.
  if (forbid && asksExecStack(p.main.info)) {
    return {reached: new Set(), edge: null, error: p.dlopenEdge ? 'Fatal glibc error: executable stack is not allowed' : `${p.main.path}: ${EXEC_STACK_ERROR}`, at: -1};
  }
  const refuse = forbid || execStackRefused(p);
  const mapping = mappingOrder(p);
  for (let i = 0; i < mapping.length; i++) {
    const edge = mapping[i];
    let error: string | undefined;
    if (!edge.object) {
      if (!edge.ignored && edge.errorPath !== undefined) error = edge.error ?? `${edge.errorPath}: cannot load it`;
    } else if ((forbid || (refuse && p.dlopenEdge !== null && i >= p.dlopenAt)) && edge.via !== 'loaded' && edge.object.role !== 'interp' && asksExecStack(edge.object.info)) {
      // Named as it was asked for (the DT_NEEDED string), as _dl_map_object_from_fd signals it.
      error = `${edge.name}: ${EXEC_STACK_ERROR}`;
    }
    if (error !== undefined) return {reached: new Set(mapping.slice(0, i + 1)), edge, error, at: i};
  }
  return null;
}

const EXEC_STACK_ERROR = 'cannot enable executable stack as shared object requires: Invalid argument';

/** `stop`: loadStop(p), which the caller also lists the process's objects by. */
export function findProblems(p: LoaderProcess, memo: SymbolMemo, stop: LoadStop | null = loadStop(p)): Finding[] {
  const findings: Finding[] = [];
  // 1. Mapping, in the order ld.so maps (the first failure is the one it reports): missing
  // libraries, files it cannot load, and objects asking for an executable stack it may not make.
  // An auxiliary object that cannot be loaded is left out by ld.so (only a DST that expands to
  // nothing in DT_AUXILIARY is fatal, and that edge carries the error).
  // The main object itself cannot be loaded (its mount, its segments, its stack): nothing else happens.
  if (p.mainStop) return [{kind: p.mainStop.noexecMount ? 'noexec-mount' : 'not-found', object: p.main, library: p.main.path, version: null, symbol: null, provider: null, edge: p.mainStop}];
  if (stop && stop.at < 0) return [{kind: 'executable-stack', object: p.main, library: p.main.path, version: null, symbol: null, provider: null, edge: null, execStack: 'forbidden'}];
  const forbidExecStack = execStackForbidden(p.ctx.tunables, p.platform.glibc);
  const mapping = mappingOrder(p);
  const stoppedAt = stop?.at ?? -1;
  for (let i = 0; i < mapping.length; i++) {
    const edge = mapping[i];
    if (stoppedAt >= 0 && i > stoppedAt) break;
    if (!edge.object) {
      if (edge.ignored) continue;
      findings.push({kind: edge.noexecMount ? 'noexec-mount' : 'not-found', object: edge.owner, library: edge.name, version: null, symbol: null, provider: null, edge});
    } else if (i === stoppedAt) {
      findings.push({kind: 'executable-stack', object: edge.object, library: edge.name, version: null, symbol: null, provider: null, edge,
        execStack: forbidExecStack ? 'forbidden' : 'dlopen'});
    }
  }
  // Stopped while the program starts (or while `ldd` loads the library): nothing more happens.
  // Stopped in --exe's dlopen: the program had started (its objects were checked and relocated);
  // the dlopen fails, so its objects are never checked, and a PLT slot bound later sees none of them.
  if (stoppedAt >= 0 && (p.dlopenEdge === null || stoppedAt < p.dlopenAt)) return findings;
  const reached = stoppedAt >= 0 ? new Set(p.scope.slice(0, p.startupScopeLength)) : null;
  if (p.filterLoop) {
    // ld.so never gets past loading the dependencies: nothing later happens.
    const [first, second] = p.filterLoop;
    const names = [...new Set(p.filterLoop.map((o) => o.info.soname ?? o.path))].join(', ');
    findings.push({kind: 'loader-abort', object: first, library: second?.info.soname ?? second?.path ?? null, version: null, symbol: null, provider: null, edge: null,
      reason: `the DT_FILTER/DT_AUXILIARY entries of ${names} name each other, and dl-deps.c moves each before the other without end`, filterLoop: p.filterLoop});
    return findings;
  }
  // 2. Version requirements (_dl_check_map_versions), every object in load order.
  const missingNames = new Set<string>();
  for (const o of p.objects) for (const e of o.edges) if (!e.object) missingNames.add(e.name);
  // Stand-ins exist only for missing libraries: nearly every process has none.
  const standIns = missingNames.size > 0 ? standInsFirst(p) : null;
  for (const obj of p.scope) {
    if (obj.role === 'interp' || (reached && !reached.has(obj))) continue;
    for (const need of obj.info.versionNeeds) {
      const provider = p.objectMatching(need.file);
      // ldd's stand-in for a library it did not find comes first in the list find_needed walks:
      // ld.so checks no version against it (l_faked), even when the library was loaded later.
      if (provider && standIns?.(need.file, provider)) continue;
      if (!provider) {
        // Not loaded: already reported as not found (ldd keeps a stand-in under that name). Else
        // vn_file names nothing loaded (a DT_NEEDED `$ORIGIN/libb.so.1` loads under the expanded
        // name): find_needed fails and ld.so aborts, `Assertion needed != NULL' (dl-version.c).
        if (missingNames.has(need.file)) continue;
        findings.push({kind: 'loader-abort', object: obj, library: need.file, version: need.versions[0]?.name ?? null, symbol: null, provider: null, edge: null,
          reason: `_dl_check_map_versions: Assertion \`needed != NULL' failed: ${obj.path} requires versions from ${need.file}, which is no name of a loaded object`});
        continue;
      }
      // No VERDEF: only a warning in ld.so.
      if (provider.info.versionDefinitions.length === 0) continue;
      for (const v of missingVersions(need, provider.info)) {
        findings.push({kind: 'version-not-found', object: obj, library: need.file, version: v.name, symbol: null, provider, edge: p.edgeTo(provider) ?? null});
      }
    }
  }
  // 3. Symbol binding over the global scope (what `ldd -r` relocates: everything but ld.so), object
  // by object in the order ld.so relocates them (dependencies first, as l_initfini sorts them): the
  // first failure here is the one a real run stops at, which the headline names.
  // 2b goes with it: before glibc 2.41, check_match asserts when a versioned lookup reaches the
  // object its vn_file names and that object has no DT_VERSYM (a library rebuilt without
  // versioning): unless an object earlier in the scope defines the symbol first, ld.so aborts
  // (dl-lookup.c) while relocating the referencing object.
  const glibc = p.platform.glibc;
  // Nearly every library has DT_VERSYM: only a process holding one without it needs the pass.
  const assertions = glibc !== null && versionAtMost(glibc, 2, 40) &&
    p.objects.some((o) => !o.info.hasVersym && o.role !== 'interp' && o.info.symbolCount > 0);
  const order = relocationOrder(p, p.ctx.tunables).filter((o) => !reached || reached.has(o));
  // 2c. Between the versions and the relocations, the x86 ISA level check (glibc 2.33 and later,
  // dl_isa_level_check over l_initfini backwards, ld.so itself skipped): an object whose GNU
  // property needs a level the CPU lacks stops the run ("CPU ISA level is lower than required").
  const cpu = p.platform.x86IsaBits;
  if (cpu !== null) {
    for (const obj of order) {
      const needed = obj.info.x86IsaNeeded;
      if (obj.role === 'interp' || (needed & cpu) === needed) continue;
      findings.push({kind: 'cpu-isa-level', object: obj, library: null, version: null, symbol: null, provider: null, edge: p.edgeTo(obj) ?? null,
        reason: `needs ISA bits 0x${needed.toString(16)}, the CPU has 0x${cpu.toString(16)}`});
    }
  }
  // With --exe, the objects the program starts with are relocated before the dlopen, with lazy
  // binding: a reference of theirs bound while the program starts can only use what it starts
  // with; a PLT slot is bound at its first call, from the global scope of then (the dlopened
  // objects joined it, RTLD_GLOBAL). Every other object binds everything when it is loaded.
  const startup = p.dlopenEdge ? new Set(p.scope.slice(0, p.startupScopeLength)) : null;
  let tlsBlock: StaticTlsBlock | undefined;
  const tls = startup && staticTlsModelled(p.main.info.machine) ? () => (tlsBlock ??= staticTlsBlockOf(p, startup)) : null;
  // Before glibc 2.30 a versioned lookup stops at the library its version names: the scope walked matters, in order.
  const versionFileScope = stopsAtVersionFile(glibc) ? lookupScopes(p, reached, startup) : null;
  for (const obj of order) {
    if (obj.role === 'interp') continue;
    // Relocations that need no undefined symbol: a program's copies, a dlopened object's own initial-exec TLS.
    const other = obj === p.main ? copyProblems(p, obj, memo, startup, {stopAtVersionFile: versionFileScope !== null, checkMatch: assertions ? glibc : null}) : [];
    if (tls && !startup!.has(obj)) other.push(...staticTlsProblems(p, obj, memo, tls));
    // When each name is bound, for an object the program starts with: asked once, and only if needed.
    let binding: ((name: string) => 'start' | 'first-call') | null | undefined;
    const bindingOf = () => binding === undefined ? (binding = startup?.has(obj) ? bindingTime(p, obj) : null) : binding;
    if (versionFileScope) {
      const when = bindingOf();
      other.push(...versionFileStops(p, obj, memo, (name) => when?.(name) === 'start' ? versionFileScope.start : versionFileScope.all));
    }
    if (references(obj.info).length === 0) {
      findings.push(...inRelocationOrder(obj, other));
      continue;
    }
    const own = assertions ? checkMatchAborts(p, obj, memo, glibc!) : [];
    own.push(...other);
    // The object and every object its DT_NEEDED edges reach (it is always in the scope with them).
    const closure = searchList(obj);
    const unbound = memo.unboundWithin(obj, closure);
    const rest = unbound.length === 0 ? [] : p.scope.filter((o) => !closure.includes(o) && (!reached || reached.has(o)));
    const when = bindingOf();
    for (const ref of unbound) {
      const at = when?.(ref.name);
      if ((at === 'start' ? rest.filter((o) => startup!.has(o)) : rest).some((o) => memo.defines(o.info, ref))) continue;
      const provider = ref.versionFile ? p.objectNamed(ref.versionFile) ?? null : null;
      own.push({
        kind: ref.version ? 'undefined-symbol' : 'unversioned-undefined-symbol', object: obj,
        library: ref.versionFile, version: ref.version, symbol: ref.name, provider,
        edge: provider ? p.edgeTo(provider) ?? null : null, ref, ...(at ? {when: at} : {}),
      });
    }
    if (when) for (const f of own) if (f.when === undefined && f.symbol !== null) f.when = when(f.symbol);
    findings.push(...inRelocationOrder(obj, own));
  }
  return findings;
}

/**
 * The objects a lookup walks, in order: the whole scope (of what the load reached), and with --exe
 * the program's start alone, for what its objects bind while it starts.
 */
function lookupScopes(p: LoaderProcess, reached: Set<LoadedObject> | null, startup: Set<LoadedObject> | null): {all: LoadedObject[]; start: LoadedObject[]} {
  const all = reached ? p.scope.filter((o) => reached.has(o)) : p.scope;
  return {all, start: startup ? all.filter((o) => startup.has(o)) : all};
}

/**
 * When an object the program starts with binds each name it looks up: while the program starts
 * (a relocation other than a PLT slot names it, the object was linked with -z now, or LD_BIND_NOW
 * is set), or at its first call (elf-loader-spec §3.4, "Timing").
 */
function bindingTime(p: LoaderProcess, obj: LoadedObject): (name: string) => 'start' | 'first-call' {
  if (obj.info.bindNow || p.ctx.bindNow) return () => 'start';
  const names = lookedUpNames(obj.info);
  // Relocations that cannot be read: bound at start, as the model did before it knew.
  return (name) => (names?.get(name)?.eager ?? true) ? 'start' : 'first-call';
}

/**
 * One object's symbol findings in the order its relocations meet them (DT_RELA, then DT_JMPREL):
 * a run stops at the first, an undefined symbol or check_match's assertion, whichever comes first.
 */
function inRelocationOrder(obj: LoadedObject, own: Finding[]): Finding[] {
  if (own.length < 2) return own;
  const ranks = lookedUpNames(obj.info);
  if (!ranks) return own;
  const rank = (f: Finding) => f.rank ?? ranks.get(f.symbol ?? '')?.rank ?? Infinity;
  return own.map((f, i) => ({f, i})).sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i).map(({f}) => f);
}

/**
 * Whether a dlopen refuses objects that ask for an executable stack (dl-load.c): from glibc 2.41
 * it no longer makes a running process's stack executable, so it fails unless the stack already
 * is (an object of the program's start asked for it: the kernel or ld.so made it so then), or
 * GLIBC_TUNABLES=glibc.rtld.execstack=2 allows it (glibc 2.42, and Debian's 2.41).
 */
function execStackRefused(p: LoaderProcess): boolean {
  const glibc = p.platform.glibc;
  if (!p.dlopenEdge || (glibc !== null && versionAtMost(glibc, 2, 40))) return false;
  if (execStackTunable(p.ctx.tunables, glibc) === 2) return false;
  return !p.scope.slice(0, p.startupScopeLength).some((o) => o.role !== 'interp' && asksExecStack(o.info));
}

/**
 * Whether, for `name`, the stand-in ld.so keeps in trace mode for a library it did not find
 * (_dl_map_object's fake map, l_faked, added to the namespace's list where the search failed)
 * comes before `provider` in that list: find_needed (dl-version.c) then matches the stand-in.
 * A real run never gets there (the missing library stops it first); `ldd -r`, which check
 * reports like, does.
 */
function standInsFirst(p: LoaderProcess): (name: string, provider: LoadedObject) => boolean {
  const failedAt = new Map<string, number>();
  const mappedAt = new Map<LoadedObject, number>();
  p.edgeOrder.forEach((e, i) => {
    if (!e.object) {
      if (!e.ignored && !failedAt.has(e.name)) failedAt.set(e.name, i);
    } else if (e.via !== 'loaded' && e.via !== 'preload' && !mappedAt.has(e.object)) {
      mappedAt.set(e.object, i);
    }
  });
  // The main object, preloads and ld.so are listed before any dependency is mapped.
  return (name, provider) => failedAt.has(name) && failedAt.get(name)! < (mappedAt.get(provider) ?? -1);
}

const missing = new WeakMap<ElfInfo, Map<ElfVersionNeed, ElfVersionNeed['versions']>>();

/**
 * The versions of `need` that `provider` does not define (weak ones aside): the same pair meets in
 * every process that loads both (libstdc++ and libc in most of a directory's), so it is asked once.
 */
function missingVersions(need: ElfVersionNeed, provider: ElfInfo): ElfVersionNeed['versions'] {
  let byNeed = missing.get(provider);
  if (!byNeed) missing.set(provider, byNeed = new Map());
  let out = byNeed.get(need);
  if (!out) byNeed.set(need, out = need.versions.filter((v) => !v.weak && !definesVersion(provider, v.name)));
  return out;
}
