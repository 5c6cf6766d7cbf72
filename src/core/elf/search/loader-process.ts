import type {Stats} from 'node:fs';
import {realpathSync} from 'node:fs';
import {dirname} from 'node:path';
import type {Via} from '../report-types.js';
import {walkDependencies, type DependencyKind} from './dependency-list.js';
import {asksExecStack, execStackForbidden} from './exec-stack.js';
import {cachedElfSync, cachedHeaderSync, FileView, inodeKey} from '../cache/file-cache.js';
import type {CapturedFacts} from '../cache/inputs.js';
import {versionAtMost} from '../read/ldcache/host-loader.js';
import type {LoaderPlatform} from '../read/machine/platform.js';
import {ElfError} from '../read/elf/index.js';
import {describeElement, parseSearchList, expandDst, type DstValues, type SearchDir} from './search-path.js';
import {MISALIGNED, segmentsMisaligned} from '../read/elf/segments.js';
import type {ElfInfo} from '../read/elf/types.js';
import {inImage, isInside} from '../read/machine/sysroot.js';

/**
 * The loader model: which file ld.so maps for every DT_NEEDED of a process, breadth first, as
 * elf/dl-deps.c and elf/dl-load.c do (elf-loader-spec.md §1). One LoaderProcess models one
 * process: the checked library as the main object (what `ldd` does), or an executable
 * (`--exe`) that then dlopens the library.
 */
export const DF_1_NODEFLIB = 0x800;
export const DF_1_PIE = 0x08000000;
/** Whether the loader checks an object's segments against the page size (./segments.ts): glibc 2.35 and later. */
const misaligned = (info: ElfInfo, platform: LoaderPlatform): boolean =>
  (platform.glibc === null || !versionAtMost(platform.glibc, 2, 34)) && segmentsMisaligned(info, platform.pageSize);
const ET_EXEC = 2;
const ET_DYN = 3;

export type CandidateStatus = 'ok' | 'wrong-class' | 'wrong-machine' | 'fatal';

/** A file the search looked at, with the rule that led there. */
export interface Candidate {
  path: string;
  via: Via;
  /** The rule in words: "LD_LIBRARY_PATH entry /usr/local/cuda/lib64". */
  rule: string;
  status: CandidateStatus;
  /** The host path to read (differs from `path` inside a sysroot, where the image's links are followed in the image). */
  file?: string;
  /** The LD_LIBRARY_PATH element as written ('' = the empty entry), when that rule found it. */
  ldEntry?: string;
  /** Why it was passed over or why the loader stops there. */
  reason: string | null;
  stat?: Stats;
}

export interface LoadedObject {
  id: number;
  /** l_name: the path string it was opened under. */
  path: string;
  /** Every name it is known by (DT_NEEDED strings, the soname once matched). */
  names: string[];
  inode: string;
  loader: LoadedObject | null;
  origin: string;
  info: ElfInfo;
  role: 'main' | 'interp' | 'preload' | 'dep' | 'dlopen';
  edges: Edge[];
  rpathDirs: SearchDir[];
  runpathDirs: SearchDir[] | null;
}

export interface Edge {
  name: string;
  /** DT_NEEDED, or a filtee (DT_FILTER, DT_AUXILIARY: ld.so ignores an auxiliary object it cannot load). */
  kind: DependencyKind;
  owner: LoadedObject;
  object: LoadedObject | null;
  via: Via | null;
  rule: string | null;
  /** Candidates skipped before the chosen one (wrong class or machine). */
  passedOver: Candidate[];
  /** Set when the loader would stop at a file it cannot load (invalid ELF header, ...). */
  error: string | null;
  /** The file the loader stops at, when `error` comes from one (not for "not found anywhere"). */
  errorPath?: string;
  /** The LD_LIBRARY_PATH element as written that found the object (or the file it stops at). */
  ldEntry?: string;
  /** A DT_AUXILIARY object that could not be loaded: ld.so goes on without it. */
  ignored?: true;
  /** Set when the loader stops at a file on a file system mounted noexec: that mount point. */
  noexecMount?: string;
  /** A preload's edge, or one to an object a preload loaded: where the entry was read, and the entry as written. */
  preloadFrom?: PreloadEntry['from'];
  preloadName?: string;
}

/** One preloaded name and where it was read. */
export interface PreloadEntry {
  name: string;
  from: 'LD_PRELOAD' | '/etc/ld.so.preload';
}

/**
 * What a search for a name (mapObject) came to: the same in every process whose loader searches
 * the same list (most objects have no RPATH or RUNPATH: the search for libc.so.6 is the same from
 * every object of every process of a check). Candidates and all are shared, and never changed.
 */
export interface Found {
  /** Candidates passed over (wrong class or machine) before `chosen`. */
  passedOver: Candidate[];
  /** The file the loader stops at or maps; null: the search found none. */
  chosen: Candidate | null;
  /** Why the loader stops at `chosen` before it compares inodes with the loaded objects' (null: it does not). */
  stop: string | null;
  info: ElfInfo | null;
  inode: string;
  /** Why mapping `chosen` fails (segments, a noexec mount), once asked; null: it maps. */
  mapStop?: {reason: string; noexecMount?: string} | null;
  /** The new object's own search lists, once made. */
  lists?: ObjectLists;
  /** With a verdict cache: what the search asked the file system, recorded again for each file that reuses it. */
  facts: CapturedFacts | null;
}

/** An object's $ORIGIN and its own search lists (newObject). */
interface ObjectLists {
  origin: string;
  rpathDirs: SearchDir[];
  runpathDirs: SearchDir[] | null;
}

/**
 * The searches of one check per platform, by the search list's key (LoaderProcess.listKey), then
 * by name. Shared by contexts that differ only in what they preload (check-one.ts startOf).
 */
export type SearchMemo = Map<LoaderPlatform, Map<string, Map<string, Found>>>;

/** Identities of search lists (parseSearchList hands out one array per list): a memo key names a list by its number. */
const listIds = new WeakMap<readonly SearchDir[], number>();
let nextListId = 0;
function listId(dirs: readonly SearchDir[]): number {
  let id = listIds.get(dirs);
  if (id === undefined) listIds.set(dirs, id = nextListId++);
  return id;
}

/** What all processes of one check share. */
export interface LoaderContext {
  view: FileView;
  platformFor(elfClass: 32 | 64, machine: number): LoaderPlatform | null;
  /** LD_LIBRARY_PATH to assume (undefined: unset). */
  ldLibraryPath?: string;
  /** LD_PRELOAD entries then /etc/ld.so.preload entries, each with where it was read. */
  preload: PreloadEntry[];
  /** The ld.so.cache answer for a name (a sysroot-prefixed path), or null. */
  cacheLookup(name: string, platform: LoaderPlatform): string | null;
  cacheLabel: string;
  /** GLIBC_TUNABLES to assume (undefined: unset). */
  tunables?: string;
  /** LD_BIND_NOW is set (non-empty): a program binds its PLT slots while it starts, not at their first call. */
  bindNow?: boolean;
  /** The noexec mount point holding a file (./mounts.ts), where mounts are this machine's (not under a sysroot). */
  noexecMount?: (path: string) => string | null;
  /** Set when the page size was given (CheckOptions.pageSize) rather than read from this machine. */
  pageSizeGiven?: boolean;
  /** The variables that change what libraries dlopen later (NCCL_NET_PLUGIN, plugin directories): runtime/families.ts RUNTIME_ENV_VARIABLES. */
  runtimeEnv?: Readonly<Record<string, string>>;
  /** Searches made once for the whole check (absent: each process searches for itself). */
  searchMemo?: SearchMemo;
}

export class LoaderProcess {
  readonly objects: LoadedObject[] = [];
  /** The global search list: main, preloads, then breadth-first order. */
  readonly scope: LoadedObject[] = [];
  readonly failedPreloads: Array<{name: string; reason: string; from: PreloadEntry['from']}> = [];
  readonly preloadEdges: Edge[] = [];
  main!: LoadedObject;
  /** How many objects of `scope` the program starts with (the rest come with --exe's dlopen). */
  startupScopeLength = 0;
  /** The checked library (the main object, or the one dlopened by --exe). */
  target!: LoadedObject;
  /** Every dependency edge, in the order ld.so maps them (its first failure is the one a run reports). */
  readonly edgeOrder: Edge[] = [];
  /** --exe: the dlopen of the target (mapped after edgeOrder's first `dlopenAt` edges, before the rest). */
  dlopenEdge: Edge | null = null;
  dlopenAt = 0;
  /** Filtees that move each other up without end: ld.so crashes there (./dependency-list.ts). */
  filterLoop: LoadedObject[] | null = null;
  /**
   * The main object itself cannot be loaded: its segments do not fit the page size (without --exe,
   * ld.so maps the checked library), or it lies on a noexec mount (`noexecMount`: the kernel does
   * not start the program, or ld.so cannot map the library). Nothing else happens then.
   */
  mainStop: Edge | null = null;
  private ldDirs: SearchDir[] = [];
  private readonly mapped = new Set<LoadedObject>();
  /**
   * Filtees dl-deps.c linked in before the head of the namespace's list (the main object has no
   * predecessor, so a filtee of the main object becomes one, and the list's head pointer never
   * learns of it): no lookup by name or by file reaches them, and a later DT_NEEDED of the same
   * library loads a second copy. Only a main object with DT_FILTER/DT_AUXILIARY (`ldd` of a filter
   * library, which check models) meets this.
   */
  private readonly unlisted = new Set<LoadedObject>();
  /** Set once a library is loaded a third time that way: ld.so keeps loading copies until mapping fails. */
  private runaway: LoadedObject[] | null = null;
  /**
   * The first object (in `objects` order) by each name it is known by (l_name or a name in
   * `names`), by soname, and by inode (the first not ld.so, the first at all): what the scans of
   * _dl_name_match_p and of "Look again" would find, without scanning.
   */
  private readonly byName = new Map<string, LoadedObject>();
  private readonly bySoname = new Map<string, LoadedObject>();
  private readonly byInode = new Map<string, LoadedObject>();
  private readonly byInodeNotInterp = new Map<string, LoadedObject>();
  /** Each loader's searches (the memo's table for its search list). */
  private readonly searchesOf = new Map<LoadedObject, Map<string, Found>>();

  constructor(readonly ctx: LoaderContext, readonly platform: LoaderPlatform) {}

  /**
   * Loads `target` as ld.so would: as the main object, or dlopened by `exe` when given.
   * `target.info` must already be read (the caller decides which files are ELF at all).
   */
  run(target: {path: string; info: ElfInfo; stat: Stats}, exe?: {path: string; info: ElfInfo; stat: Stats}): void {
    const mainFile = exe ?? target;
    // A kernel-started program's $ORIGIN has symlinks resolved; a library loaded by path does not.
    let mainOrigin = dirname(mainFile.path);
    if (exe) {
      try {
        const real = realpathSync.native(exe.path);
        this.ctx.view.recorder?.fact('r', exe.path, real);
        mainOrigin = dirname(real);
      } catch {
        // keep the unresolved directory
        this.ctx.view.recorder?.fact('r', exe.path, '-');
      }
    }
    this.main = this.newObject(mainFile.path, mainFile.path, mainFile.info, inodeKey(mainFile.stat), null, 'main', this.listsOf(mainFile.path, mainFile.info, mainOrigin));
    // In the order ld.so meets them for a dependency (see mapObject): the segments, then the mount.
    const badSegments = !exe && misaligned(mainFile.info, this.platform);
    const noexec = badSegments ? null : this.ctx.noexecMount?.(mainFile.path) ?? null;
    if (badSegments || noexec !== null) {
      this.mainStop = {name: mainFile.path, kind: 'needed', owner: this.main, object: null, via: null, rule: null, passedOver: [],
        error: `${mainFile.path}: ${noexec !== null ? 'failed to map segment from shared object' : MISALIGNED}`, errorPath: mainFile.path,
        ...(noexec !== null ? {noexecMount: noexec} : {})};
    }
    this.seedInterpreter(mainFile.info);
    this.ensureInterp();
    this.ldDirs = parseSearchList(this.ctx.ldLibraryPath, this.dst(this.main), 'env', this.imageOf(this.main.path));
    this.scope.push(this.main);
    for (const {name, from} of this.ctx.preload) {
      const edge = this.mapObject(this.main, name, true, 'preload', from);
      this.preloadEdges.push(edge);
      if (!edge.object) {
        // The entry's own path is said once ("/x/libx.so: cannot enable executable stack ..."); under a
        // sysroot the loader stopped at the image's file (sysroot + name), which is the same path again.
        const file = name.startsWith('/') ? inImage(this.imageOf(this.main.path), name) : name;
        const own = (edge.errorPath === name || edge.errorPath === file) && edge.error?.startsWith(`${edge.errorPath}: `);
        this.failedPreloads.push({name, from, reason: own ? edge.error!.slice(edge.errorPath!.length + 2) : edge.error ?? 'cannot open shared object file'});
      } else if (!this.scope.includes(edge.object)) {
        this.scope.push(edge.object);
      }
    }
    this.scope.splice(0, this.scope.length, ...this.walk(this.scope));
    this.startupScopeLength = this.scope.length;
    this.target = this.main;
    if (exe && !this.filterLoop) {
      // dlopen by path: no search; the new object has no loader (spec §1.11). Its search list's
      // objects not loaded yet join the global scope (RTLD_GLOBAL), in that list's order.
      const edge = this.mapObject(this.main, target.path, false, 'dlopen');
      this.dlopenEdge = edge;
      this.dlopenAt = this.edgeOrder.length;
      if (edge.object) {
        this.target = edge.object;
        for (const o of this.walk([edge.object])) if (!this.scope.includes(o)) this.scope.push(o);
      }
    }
  }

  /**
   * A dlopen of `name` by `caller` once the process has started (what libcudart does for
   * libcuda.so.1 at the first CUDA call): an object already loaded under that name or SONAME is
   * reused; otherwise the search is `caller`'s (dl-open.c passes the calling object as loader:
   * its DT_RUNPATH, or the DT_RPATH of it and its loaders and of the program, then
   * LD_LIBRARY_PATH, the cache, the default directories). The new object has no loader, and its
   * search list joins the scope as --exe's dlopen does. Only for a process run without --exe.
   */
  loadAtRunTime(caller: LoadedObject, name: string): Edge {
    if (this.dlopenEdge) throw new Error('loadAtRunTime: the process already has a dlopen');
    const edge = this.mapObject(caller, name, false, 'dlopen');
    this.dlopenEdge = edge;
    this.dlopenAt = this.edgeOrder.length;
    if (edge.object && !this.filterLoop) {
      for (const o of this.walk([edge.object])) if (!this.scope.includes(o)) this.scope.push(o);
    }
    return edge;
  }

  /** _dl_map_object_deps from `start`: its search list; sets `filterLoop` when ld.so would never finish. */
  private walk(start: LoadedObject[]): LoadedObject[] {
    const {list, loop} = walkDependencies(start, (o) => this.dependenciesOf(o), (filtee, before) => {
      if (before === this.main || this.unlisted.has(before)) this.unlisted.add(filtee);
      else this.unlisted.delete(filtee);
    });
    if (loop) this.filterLoop = this.runaway ?? loop;
    return list;
  }

  /** The object known by `name` (l_name, a name it was loaded under, or its soname), as _dl_name_match_p sees it. */
  objectNamed(name: string): LoadedObject | undefined {
    return this.byName.get(name) ?? this.bySoname.get(name);
  }

  /**
   * _dl_name_match_p over every loaded object: l_name or a name it was loaded under (a soname
   * counts only once a DT_NEEDED search matched it). What find_needed (dl-version.c) uses.
   */
  objectMatching(name: string): LoadedObject | undefined {
    return this.byName.get(name);
  }

  /** Adds a name `obj` is known by. */
  private addName(obj: LoadedObject, name: string): void {
    obj.names.push(name);
    const first = this.byName.get(name);
    if (first === undefined || first.id > obj.id) this.byName.set(name, obj);
  }

  /** The edge that first loaded `object` (its rule), if any. */
  edgeTo(object: LoadedObject): Edge | undefined {
    for (const o of this.scope) {
      for (const e of o.edges) if (e.object === object && e.via !== 'loaded' && e.via !== 'preload') return e;
    }
    return this.preloadEdges.find((e) => e.object === object);
  }

  /**
   * The dependency edges of `obj`, mapped the first time the list walk reaches it (dl-deps.c):
   * DT_NEEDED, DT_FILTER and DT_AUXILIARY entries in dynamic-array order. ld.so itself is
   * never walked.
   */
  private dependenciesOf(obj: LoadedObject): Edge[] | null {
    if (this.runaway) return null;
    if (this.mapped.has(obj)) return obj.edges;
    this.mapped.add(obj);
    if (obj.role === 'interp') return obj.edges;
    const {needed, filtees} = obj.info;
    let f = 0;
    for (let n = 0; n <= needed.length; n++) {
      for (; f < filtees.length && filtees[f].neededBefore <= n; f++) {
        this.mapDependency(obj, filtees[f].name, filtees[f].auxiliary ? 'auxiliary' : 'filter');
      }
      if (n < needed.length) this.mapDependency(obj, needed[n], 'needed');
    }
    return obj.edges;
  }

  private mapDependency(obj: LoadedObject, raw: string, kind: DependencyKind): void {
    const {value, hadToken} = raw.includes('$') ? expandDst(raw, this.dst(obj)) : {value: raw, hadToken: false};
    let edge: Edge;
    if (hadToken && (value === null || value === '')) {
      // A name whose tokens expand to nothing is skipped silently, except in DT_AUXILIARY: dl-deps.c
      // passes `fatal` for it (and not for DT_FILTER, the reverse of its comment), and the load fails.
      if (kind !== 'auxiliary') return;
      edge = {name: raw, kind, owner: obj, object: null, via: null, rule: null, passedOver: [], error: `${raw}: empty dynamic string token substitution`};
    } else {
      edge = this.mapObject(obj, value ?? raw, false);
      edge.kind = kind;
      if (kind === 'auxiliary' && !edge.object) edge.ignored = true;
    }
    obj.edges.push(edge);
    this.edgeOrder.push(edge);
  }

  private dst(obj: LoadedObject): DstValues {
    return {origin: obj.origin, platform: this.platform.platform, lib: this.platform.lib};
  }

  private seedInterpreter(mainInfo: ElfInfo): void {
    const interp = mainInfo.interp ?? this.platform.interp;
    if (!interp) return;
    const path = this.platform.sysroot + interp;
    // Through the check's view: every process of a check starts with the same ld.so (a first check
    // of 473 libraries stat'ed it 473 times).
    const st = this.ctx.view.stat(path);
    if (!st) return;
    // Inside a sysroot /lib64/ld-linux-x86-64.so.2 is usually an absolute link into the image.
    const file = this.ctx.view.hostPath(path) ?? path;
    // ld.so is registered under its PT_INTERP string and its soname before anything is loaded.
    this.pendingInterp = {path, file, interp, st};
  }

  private pendingInterp?: {path: string; file: string; interp: string; st: Stats};

  private ensureInterp(): void {
    const p = this.pendingInterp;
    if (!p) return;
    this.pendingInterp = undefined;
    try {
      const info = cachedElfSync(p.file, p.st);
      const obj = this.newObject(p.path, p.interp, info, inodeKey(p.st), null, 'interp', this.listsOf(p.path, info, dirname(p.path)));
      if (info.soname) this.addName(obj, info.soname);
    } catch {
      // an unreadable interpreter is not registered; its soname is then searched like any name
    }
  }

  /** The $ORIGIN and own search lists of an object at `path`: the same for each object made of one search's answer. */
  private listsOf(path: string, info: ElfInfo, origin = dirname(path)): ObjectLists {
    if (info.runpath === null && info.rpath === null) return {origin, rpathDirs: [], runpathDirs: null};
    const values: DstValues = {origin, platform: this.platform.platform, lib: this.platform.lib};
    return {
      origin,
      // An object with both keeps only DT_RUNPATH (get-dynamic-info.h), for itself and its descendants.
      // An object of a system image: an absolute entry is a directory of the image, as on that system (inImage).
      rpathDirs: info.runpath !== null ? [] : parseSearchList(info.rpath, values, 'dt', this.imageOf(path)),
      runpathDirs: info.runpath !== null ? parseSearchList(info.runpath, values, 'dt', this.imageOf(path)) : null,
    };
  }

  private newObject(path: string, name: string, info: ElfInfo, inode: string, loader: LoadedObject | null, role: LoadedObject['role'], lists: ObjectLists): LoadedObject {
    const obj: LoadedObject = {
      id: this.objects.length, path, names: [], inode, loader, origin: lists.origin, info, role, edges: [],
      rpathDirs: lists.rpathDirs, runpathDirs: lists.runpathDirs,
    };
    this.objects.push(obj);
    // Kept first by id: a later object never displaces an earlier one of the same name.
    if (!this.byName.has(path)) this.byName.set(path, obj);
    this.addName(obj, name);
    if (info.soname !== null && !this.bySoname.has(info.soname)) this.bySoname.set(info.soname, obj);
    if (!this.byInode.has(inode)) this.byInode.set(inode, obj);
    if (role !== 'interp' && !this.byInodeNotInterp.has(inode)) this.byInodeNotInterp.set(inode, obj);
    return obj;
  }

  /** _dl_map_object: an already loaded object by name, else the first acceptable file of the search. */
  mapObject(loader: LoadedObject, name: string, preload: boolean, role: LoadedObject['role'] = preload ? 'preload' : 'dep', preloadFrom?: PreloadEntry['from']): Edge {
    const edge: Edge = {name, kind: 'needed', owner: loader, object: null, via: null, rule: null, passedOver: [], error: null};
    // Objects no lookup reaches (see `unlisted`) are left out by scanning; otherwise the indexes answer.
    const listed = this.unlisted.size === 0 ? null : this.objects.filter((o) => !this.unlisted.has(o));
    const known = listed ? listed.find((o) => o.path === name || o.names.includes(name)) : this.byName.get(name);
    const bySoname = known ?? (listed ? listed.find((o) => o.info.soname === name) : this.bySoname.get(name));
    if (bySoname) {
      if (!known) this.addName(bySoname, name);
      edge.object = bySoname;
      edge.via = bySoname.role === 'preload' ? 'preload' : 'loaded';
      // The edge shows the object's path already: the rule says how it came to be loaded, not the path again.
      const preloaded = bySoname.role === 'preload' ? this.preloadEdges.find((e) => e.object === bySoname) : undefined;
      if (preloaded?.preloadFrom) Object.assign(edge, {preloadFrom: preloaded.preloadFrom, preloadName: preloaded.name});
      edge.rule = preloaded?.preloadFrom ? `already loaded: the ${preloaded.preloadFrom} entry ${preloaded.name}`
        : known ? 'already loaded' : `already loaded, with the SONAME ${name}`;
      return edge;
    }
    const found = this.search(loader, name);
    for (const c of found.passedOver) edge.passedOver.push(c);
    const c = found.chosen;
    if (c === null) {
      if (edge.passedOver.length > 0) {
        const wrongClass = edge.passedOver.find((p) => p.status === 'wrong-class');
        edge.error = wrongClass ? `wrong ELF class: ELFCLASS${wrongClass.reason?.includes('32') ? 32 : 64}` : null;
      }
      return edge;
    }
    // The loader stops at this file, with this reason: the search goes no further.
    const stop = (reason: string): Edge => {
      edge.error = reason.startsWith(`${c.path}:`) ? reason : `${c.path}: ${reason}`;
      edge.errorPath = c.path;
      edge.rule = c.rule;
      if (c.ldEntry !== undefined) edge.ldEntry = c.ldEntry;
      return edge;
    };
    if (found.stop !== null) return stop(found.stop);
    const info = found.info!;
    edge.via = preload ? 'preload' : c.via;
    // A preload names a file itself (a path) or has it searched like a DT_NEEDED entry of the program.
    edge.rule = preload && preloadFrom ? `the ${preloadFrom} entry ${name}${name.includes('/') ? '' : `, found by ${c.rule}`}` : c.rule;
    if (preload && preloadFrom) Object.assign(edge, {preloadFrom, preloadName: name});
    if (c.ldEntry !== undefined) edge.ldEntry = c.ldEntry;
    const inode = found.inode;
    const same = listed
      ? listed.find((o) => o.inode === inode && o.role !== 'interp') ?? listed.find((o) => o.inode === inode)
      : this.byInodeNotInterp.get(inode) ?? this.byInode.get(inode);
    if (same) {
      // The same file under another name is one object (dl-load.c "Look again").
      this.addName(same, name);
      edge.object = same;
      return edge;
    }
    // Mapping it fails (dl-load.c); for a preload ld.so says so and goes on without it (rtld.c
    // do_preload), elsewhere the checker reports the stop.
    if (found.mapStop === undefined) {
      const noexec = misaligned(info, this.platform) ? undefined : this.ctx.noexecMount?.(c.file ?? c.path) ?? null;
      found.mapStop = noexec === undefined ? {reason: MISALIGNED}
        : noexec !== null ? {reason: 'failed to map segment from shared object', noexecMount: noexec} : null;
    }
    if (found.mapStop !== null) {
      if (found.mapStop.noexecMount !== undefined) edge.noexecMount = found.mapStop.noexecMount;
      return stop(found.mapStop.reason);
    }
    if (preload && execStackForbidden(this.ctx.tunables, this.platform.glibc) && asksExecStack(info)) {
      return stop('cannot enable executable stack as shared object requires');
    }
    edge.object = this.newObject(c.path, name, info, inode, role === 'dlopen' ? null : loader, role, found.lists ??= this.listsOf(c.path, info));
    // Only an object no lookup reaches can be loaded again (see `unlisted`).
    if (this.unlisted.size > 0) {
      const copies = this.objects.filter((o) => o.inode === inode);
      if (copies.length >= 3) this.runaway = copies;
    }
    return edge;
  }

  /**
   * The search for `name` by `loader`, made once per check for each search list (the memo's key
   * names every directory searched, in order, and each object whose path a rule names), and
   * with a verdict cache the facts it asked recorded again for each file that reuses it.
   */
  private search(loader: LoadedObject, name: string): Found {
    const memo = this.ctx.searchMemo;
    // A name with a slash is opened as written, relative to the working directory or the image.
    if (!memo || name.includes('/')) return this.searchNow(loader, name);
    let table = this.searchesOf.get(loader);
    if (!table) {
      let lists = memo.get(this.platform);
      if (!lists) memo.set(this.platform, lists = new Map());
      const key = this.listKey(loader);
      table = lists.get(key);
      if (!table) lists.set(key, table = new Map());
      this.searchesOf.set(loader, table);
    }
    const recorder = this.ctx.view.recorder;
    let found = table.get(name);
    if (found !== undefined && (recorder === null || found.facts !== null)) {
      if (recorder && found.facts) recorder.replay(found.facts);
      return found;
    }
    const captured = recorder?.capture();
    try {
      found = this.searchNow(loader, name);
    } finally {
      const facts = captured?.();
      if (found) found.facts = facts ?? null;
    }
    table.set(name, found);
    return found;
  }

  /**
   * What the search list of `loader` is made of, as searchDirs walks it: each list by its identity,
   * with the path of the object a rule names (DT_RPATH's of the loader, its loaders and the
   * program; LD_LIBRARY_PATH's as this process expands it; DT_RUNPATH's), and DF_1_NODEFLIB.
   */
  private listKey(loader: LoadedObject): string {
    let key = '';
    if (loader.runpathDirs === null) {
      let didMain = false;
      for (let l: LoadedObject | null = loader; l; l = l.loader) {
        if (l === this.main) didMain = true;
        if (l.rpathDirs.length > 0) key += `P${listId(l.rpathDirs)}:${l.path}\0`;
      }
      if (!didMain && this.main.rpathDirs.length > 0) key += `P${listId(this.main.rpathDirs)}:${this.main.path}\0`;
    }
    if (this.ldDirs.length > 0) key += `L${listId(this.ldDirs)}\0`;
    if (loader.runpathDirs !== null) key += `R${listId(loader.runpathDirs)}:${loader.path}\0`;
    if ((loader.info.flags1 & DF_1_NODEFLIB) !== 0) key += 'N';
    return key;
  }

  /** The search itself: candidates in order up to the first the loader does not pass over, and what it finds there. */
  private searchNow(loader: LoadedObject, name: string): Found {
    const passedOver: Candidate[] = [];
    const at = (c: Candidate, stop: string | null, info: ElfInfo | null = null): Found =>
      ({passedOver, chosen: c, stop, info, inode: stop === null ? inodeKey(c.stat!) : '', facts: null});
    for (const c of this.candidates(loader, name)) {
      if (c.status === 'wrong-class' || c.status === 'wrong-machine') {
        passedOver.push(c);
        continue;
      }
      if (c.status === 'fatal') return at(c, c.reason ?? 'cannot load it');
      let info: ElfInfo;
      try {
        info = cachedElfSync(c.file ?? c.path, c.stat!);
      } catch (error) {
        return at(c, error instanceof Error ? error.message : String(error));
      }
      // ld.so maps it, then finds no dynamic section to use: fatal for a shared object (dl-load.c).
      if (info.type === ET_DYN && info.dynamic !== 'yes') return at(c, 'object file has no dynamic section');
      // glibc 2.30 started refusing PIE objects as dependencies (2c75b545de).
      if ((info.flags1 & DF_1_PIE) !== 0 && !(this.platform.glibc && versionAtMost(this.platform.glibc, 2, 29))) {
        return at(c, 'cannot dynamically load position-independent executable');
      }
      return at(c, null, info);
    }
    return {passedOver, chosen: null, stop: null, info: null, inode: '', facts: null};
  }

  /**
   * Every file the search for `name` by `loader` would consider, in ld.so's order (§1.3 step C),
   * each with its verdict. mapObject takes the first acceptable one; the explainer looks further.
   * The directories of steps 1-6, with the cache between RUNPATH and the system directories; a
   * rule's words are made only for a file found.
   */
  *candidates(loader: LoadedObject, name: string): Generator<Candidate> {
    if (name.includes('/')) {
      // Opened as written, and named so (l_name, and l_origin for the object's own $ORIGIN, keep
      // ld.so's text: `top/../d0/libb.so.1`); the kernel resolves its `..` after a symlinked
      // directory when the file is opened, and so does every stat and read of it here.
      const path = name.startsWith('/') ? inImage(this.imageOf(loader.path), name) : this.absolute(name);
      const c = this.probe(path, 'default', `the path ${name} written in DT_NEEDED`);
      if (c) yield c;
      return;
    }
    if (loader.runpathDirs === null) {
      let didMain = false;
      for (let l: LoadedObject | null = loader; l; l = l.loader) {
        if (l === this.main) didMain = true;
        if (l.rpathDirs.length > 0) yield* this.inDirs(name, l.rpathDirs, 'rpath', l);
      }
      if (!didMain && this.main.rpathDirs.length > 0) yield* this.inDirs(name, this.main.rpathDirs, 'rpath', this.main);
    }
    if (this.ldDirs.length > 0) yield* this.inDirs(name, this.ldDirs, 'ld_library_path', null);
    if (loader.runpathDirs !== null && loader.runpathDirs.length > 0) yield* this.inDirs(name, loader.runpathDirs, 'runpath', loader);
    const hit = this.ctx.cacheLookup(name, this.platform);
    const nodeflib = (loader.info.flags1 & DF_1_NODEFLIB) !== 0;
    // DF_1_NODEFLIB rejects a cache answer inside a system directory (dl-load.c).
    if (hit && !(nodeflib && this.platform.systemDirs.some((d) => hit.startsWith(d)))) {
      const c = this.probe(hit, 'ld.so.cache', this.ctx.cacheLabel);
      if (c) yield c;
    }
    if (!nodeflib) yield* this.inDirs(name, this.platform.systemDirs, 'default', null);
  }

  /** `name` in each directory of a list and its hwcaps subdirectories, in order; `owner`: whose DT_RPATH or DT_RUNPATH. */
  private *inDirs(name: string, dirs: readonly (SearchDir | string)[], via: Via, owner: LoadedObject | null): Generator<Candidate> {
    const view = this.ctx.view;
    for (const d of dirs) {
      const dir = typeof d === 'string' ? d : d.dir;
      const ldEntry = via === 'ld_library_path' ? (d as SearchDir).element : undefined;
      for (const sub of view.listableSubdirs(dir, this.platform.hwcapsSubdirs)) {
        const subdir = `${dir}${sub}/`;
        if (!view.has(subdir, name)) continue;
        const c = this.probe(this.absolute(subdir + name), via, `${this.ruleOf(d, via, owner)} (${sub})`);
        if (c && ldEntry !== undefined) c.ldEntry = ldEntry;
        if (c) yield c;
      }
      if (!view.has(dir, name)) continue;
      const c = this.probe(this.absolute(dir + name), via, this.ruleOf(d, via, owner));
      if (c && ldEntry !== undefined) c.ldEntry = ldEntry;
      if (c) yield c;
    }
  }

  /** The words of the rule that searches directory `d`. */
  private ruleOf(d: SearchDir | string, via: Via, owner: LoadedObject | null): string {
    if (typeof d === 'string') return `system directory ${d.replace(/\/$/, '')}`;
    const element = describeElement(d.element, this.ctx.view.cwd);
    return via === 'ld_library_path' ? `LD_LIBRARY_PATH entry ${element}`
      : `${via === 'rpath' ? 'DT_RPATH' : 'DT_RUNPATH'} entry ${element} of ${owner!.path}`;
  }

  /**
   * The root of the system image (CUDAENV_SYSROOT) a file lies in, whose absolute paths its search
   * names (and, for the main object, LD_LIBRARY_PATH and LD_PRELOAD name) are; '' for a file outside
   * it, checked by the image's loader rules but read where it is.
   */
  private imageOf(path: string): string {
    return isInside(this.platform.sysroot, path) ? this.platform.sysroot : '';
  }

  /** A relative name as dl-object.c makes l_origin of it: the working directory (getcwd), a slash, the name. */
  private absolute(path: string): string {
    return path.startsWith('/') ? path : `${this.ctx.view.workingDir().replace(/\/$/, '')}/${path}`;
  }

  /** Checks one file as open_verify does (§1.8); null when there is nothing there. */
  private probe(path: string, via: Via, rule: string): Candidate | null {
    const st = this.ctx.view.stat(path);
    if (!st) return null;
    if (st.isDirectory()) return {path, via, rule, status: 'fatal', reason: 'cannot read file data: Is a directory'};
    // open_verify reads a whole ELF header before looking at the magic (§1.8).
    if (st.size < (this.platform.elfClass === 64 ? 64 : 52)) return {path, via, rule, status: 'fatal', reason: 'file too short'};
    const file = this.ctx.view.hostPath(path) ?? path;
    let header;
    try {
      header = cachedHeaderSync(file, st);
    } catch (error) {
      if (error instanceof ElfError) {
        if (error.reason === 'io') return null;
        const reason = error.reason === 'not-elf' ? 'invalid ELF header' : error.reason === 'truncated' ? 'file too short' : error.message;
        return {path, via, rule, status: 'fatal', reason};
      }
      throw error;
    }
    if (header.elfClass !== this.platform.elfClass) return {path, via, rule, status: 'wrong-class', reason: `wrong ELF class: ELFCLASS${header.elfClass}`, stat: st};
    if (header.machine !== this.platform.machine) return {path, via, rule, status: 'wrong-machine', reason: `built for machine ${header.machine}`, stat: st};
    if (!header.littleEndian) return {path, via, rule, status: 'fatal', reason: 'ELF file data encoding not little-endian'};
    if (header.type !== ET_DYN && header.type !== ET_EXEC) return {path, via, rule, status: 'fatal', reason: 'only ET_DYN and ET_EXEC can be loaded'};
    return {path, via, rule, status: 'ok', reason: null, stat: st, file};
  }
}
