import type {ProblemKind} from './api.js';
import type {Edge, LoadedObject, LoaderProcess} from './resolver.js';
import {buildDefinitions, defines, definesVersion, references, type Defs, type SymbolRef} from './symbols.js';
import type {ElfInfo} from './types.js';
import {lookedUpNames} from './file-cache.js';
import {copyProblems, staticTlsBlockOf, staticTlsProblems} from './relocation-problems.js';
import {staticTlsModelled, type StaticTlsBlock} from './static-tls.js';
import {versionAtMost} from './ldcache/host-loader.js';
import {relocationOrder, searchList} from './relocation-order.js';
import {asksExecStack, execStackForbidden, execStackTunable} from './exec-stack.js';
import {stopsAtVersionFile, versionFileStops} from './version-file-stop.js';
import {checkMatchAborts} from './check-match.js';

/**
 * What would fail in a modelled process (elf-loader-spec.md §3): missing libraries, version
 * nodes the chosen library does not define, and references nothing in the global scope binds.
 */
export interface Finding {
  kind: ProblemKind;
  object: LoadedObject;
  /** The DT_NEEDED / vn_file name involved (null for unversioned symbols). */
  library: string | null;
  version: string | null;
  symbol: string | null;
  /** The loaded object the requirement was checked against. */
  provider: LoadedObject | null;
  /** The edge that loaded the provider (or failed to). */
  edge: Edge | null;
  /** Set for symbol findings. */
  ref?: SymbolRef;
  /** For 'loader-abort': the assertion and its cause. */
  reason?: string;
  /** With --exe, for a symbol finding of an object the program starts with: when the reference is bound (Problem.when). */
  when?: 'start' | 'first-call';
  /** A program's copy relocation whose definition nothing outside the program provides. */
  copy?: boolean;
  /** The rank of the relocation that meets it, where the object's looked-up names do not tell (copies, static TLS). */
  rank?: number;
  /**
   * For 'static-tls': the object whose initial-exec relocation needs `object`'s TLS block at a static
   * offset, the bytes left in the block, how much more surplus would do, and the surplus settings.
   */
  staticTls?: {referrer: LoadedObject; free: number; shortfall: number; surplus: number; optional: number; tunable: boolean; blockAlign: number};
  /** For 'loader-abort': the filtees that make ld.so crash (walking its dependencies without end). */
  filterLoop?: LoadedObject[];
  /**
   * For 'executable-stack': 'dlopen' when a dlopen may not make the stack executable (glibc 2.41),
   * 'forbidden' when GLIBC_TUNABLES=glibc.rtld.execstack=0 refuses every executable stack.
   */
  execStack?: 'dlopen' | 'forbidden';
  /**
   * For 'undefined-symbol' under glibc before 2.30: the lookup stopped at `provider`, the library
   * the version names, which lacks the symbol; `later` defines it further on in the scope (what
   * 2.30 and later bind), `weak` the reference is weak (./version-file-stop.ts).
   */
  versionFileStop?: {later: LoadedObject | null; weak: boolean};
}

/**
 * Remembers, per object and the set of objects its own dependencies bring, which references those
 * leave unbound: in a directory of libraries the same libc or libcublas appears in hundreds of
 * processes, and this makes each one cost a lookup.
 */
export class SymbolMemo {
  private ids = new WeakMap<ElfInfo, number>();
  private next = 0;
  private memo = new Map<string, SymbolRef[]>();
  private indexes = new WeakMap<ElfInfo, Map<string, Defs>>();
  /** The object a name was last found in: the first to ask for the next reference to it. */
  private lastDefiner = new Map<string, ElfInfo>();

  private wanted?: Set<string> | null;

  /**
   * @param wantedOf every name referenced in the processes this memo serves (null: index all);
   * asked for only when an object read with all its symbols must be indexed.
   */
  constructor(private readonly wantedOf: (() => Set<string>) | null = null) {}

  /** Does `info` define `ref`? Through an index of only the wanted names. */
  defines(info: ElfInfo, ref: SymbolRef): boolean {
    // Read with {symbols: 'undefined'}: the object's own hash table is the index.
    if (info.lookup) return defines(info, ref);
    let index = this.indexes.get(info);
    if (!index) {
      if (this.wanted === undefined) this.wanted = this.wantedOf ? this.wantedOf() : null;
      index = buildDefinitions(info, this.wanted ?? undefined);
      this.indexes.set(info, index);
    }
    return defines(info, ref, index);
  }

  id(info: ElfInfo): number {
    let id = this.ids.get(info);
    if (id === undefined) {
      id = this.next++;
      this.ids.set(info, id);
    }
    return id;
  }

  unboundWithin(obj: LoadedObject, closure: LoadedObject[]): SymbolRef[] {
    // A typed array sorts numbers natively (no comparator calls): this runs for every object of every process.
    const ids = new Int32Array(closure.length);
    for (let k = 0; k < closure.length; k++) ids[k] = this.id(closure[k].info);
    const key = `${this.id(obj.info)}|${ids.sort().join(',')}`;
    let unbound = this.memo.get(key);
    if (!unbound) {
      // The library a versioned reference names (vn_file) nearly always defines it: it is asked
      // first, which spares most lookups in the others (the answer does not depend on the order).
      const named = new Map<string, LoadedObject>();
      for (const o of closure) {
        for (const n of o.names) if (!named.has(n)) named.set(n, o);
        if (o.info.soname !== null && !named.has(o.info.soname)) named.set(o.info.soname, o);
      }
      // Unversioned references: the object that last defined the name is asked first when it is here.
      const present = new Map<ElfInfo, LoadedObject>();
      for (const o of closure) if (!present.has(o.info)) present.set(o.info, o);
      // The object itself is skipped: a name it references is not also one it defines.
      unbound = references(obj.info).filter((ref) => {
        let likely = ref.versionFile === null ? undefined : named.get(ref.versionFile);
        if (likely === undefined) {
          const last = this.lastDefiner.get(ref.name);
          likely = last === undefined ? undefined : present.get(last);
        }
        if (likely !== undefined && likely !== obj && this.defines(likely.info, ref)) return false;
        const definer = closure.find((o) => o !== obj && o !== likely && this.defines(o.info, ref));
        if (definer === undefined) return true;
        this.lastDefiner.set(ref.name, definer.info);
        return false;
      });
      // Only now, for the few objects with something unbound: is it looked up at all (a relocation)?
      if (unbound.length > 0) {
        const names = lookedUpNames(obj.info);
        if (names) unbound = unbound.filter((ref) => names.has(ref.name));
      }
      this.memo.set(key, unbound);
    }
    return unbound;
  }
}

/** Every symbol name the objects of these processes reference. */
export function referencedNames(processes: LoaderProcess[]): Set<string> {
  const names = new Set<string>();
  const seen = new Set<ElfInfo>();
  for (const p of processes) {
    for (const o of p.scope) {
      if (seen.has(o.info)) continue;
      seen.add(o.info);
      for (const r of references(o.info)) names.add(r.name);
    }
  }
  return names;
}

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
  for (const [i, edge] of mapping.entries()) {
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
  for (const [i, edge] of mapping.entries()) {
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
      for (const v of need.versions) {
        if (v.weak || definesVersion(provider.info, v.name)) continue;
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

/** Failures that stop the program; unversioned ones count only under --strict. */
export function isFailing(kind: ProblemKind, strict: boolean): boolean {
  return kind !== 'unversioned-undefined-symbol' || strict;
}
