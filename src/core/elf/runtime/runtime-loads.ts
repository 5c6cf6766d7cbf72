import {basename, dirname, join} from 'node:path';
import type {Edge, LoadedObject, LoaderProcess} from '../search/loader-process.js';
import {findProblems} from '../bind/find-problems.js';
import type {Finding} from '../bind/finding.js';
import type {SymbolMemo} from '../bind/symbol-memo.js';
import {nvidiaModuleLoaded} from '../read/machine/nvidia-driver.js';
import {DRIVER_LIBRARIES, NO_DRIVER_FEATURE, type RuntimeEnv, type RuntimeLoadRole} from './families.js';
import {callerLoads, cudaMajorOf, importsDlopen, pluginCallers, type CallerLoad} from './callers.js';
import {libcudaChecks, releaseChecks, type ReleaseCheck} from './release-checks.js';

/** One library a loaded object will dlopen, modelled in a process of its own. */
export interface RuntimeLoad {
  /** The object that calls dlopen, in the process the check modelled. */
  caller: LoadedObject;
  name: string;
  role: RuntimeLoadRole;
  /** The process in which the load was modelled: the checked file's start, then this dlopen. */
  process: LoaderProcess;
  /** The dlopen, in `process`. */
  edge: Edge;
  /** What the loader finds wrong with the load: the name not found, the new objects' versions and symbols. */
  findings: Finding[];
  /** Checks of what was loaded that the loader does not make: the driver's libcuda, one release per set. */
  checks: ReleaseCheck[];
}

/** The loads an object of `p` makes, read from its file (runtime/callers.ts). */
function loadsOf(p: LoaderProcess, caller: LoadedObject): CallerLoad[] {
  // What cannot call dlopen loads nothing, by its strings or from a directory (callerLoads and
  // pluginCallers say so too): nine objects in ten of a process, spared the rest.
  if (!importsDlopen(caller.info)) return [];
  const env = (p.ctx.runtimeEnv ?? {}) as RuntimeEnv;
  const host = p.ctx.view.hostPath(caller.path) ?? caller.path;
  const cudaMajor = () => cudaMajorOf(caller.info, p.scope.map((o) => o.info.soname));
  return [...callerLoads(caller.info, host, caller.inode, caller.info.soname ?? basename(caller.path), cudaMajor, env), ...pluginLoads(p, caller, host, env)];
}

/**
 * The plugins an object of `p` loads from the directories it lists (families.ts PLUGIN_DIRECTORIES),
 * each a load of its path: the regular files of each directory whose names the caller takes, in
 * name order, and the file its variable names (GGML_BACKEND_PATH). Listed through the check's view
 * of the file system, so a plugin added or removed changes a cached verdict.
 */
function pluginLoads(p: LoaderProcess, caller: LoadedObject, host: string, env: RuntimeEnv): CallerLoad[] {
  const loads: CallerLoad[] = [];
  for (const {fact, strings} of pluginCallers(caller.info, host, caller.inode)) {
    const seen = new Set<string>();
    for (const {dir: named, from, compiledIn} of fact.directories({env, strings, programDir: dirname(p.main.path)})) {
      // A directory compiled into the file is one of the system it runs on: under CUDAENV_SYSROOT, the image's.
      const dir = compiledIn ? `${p.platform.sysroot}${named}` : named;
      const names = [...(p.ctx.view.list(dir.endsWith('/') ? dir : `${dir}/`) ?? [])].sort();
      for (const file of names) {
        if (!file.startsWith(fact.prefix) || !file.endsWith(fact.suffix) || file.length <= fact.prefix.length + fact.suffix.length) continue;
        if (!fact.accepts(file.slice(fact.prefix.length, file.length - fact.suffix.length), strings)) continue;
        const path = join(dir, file);
        if (seen.has(path) || !p.ctx.view.stat(path)?.isFile()) continue;
        seen.add(path);
        loads.push(plugin(fact.role(file, fact.cuda.test(file)), path, dir, from, fact.cuda.test(file)));
      }
    }
    const named = env[fact.env];
    if (fact.envNamesFile && named) {
      const file = basename(named);
      loads.push(plugin(fact.role(file, fact.cuda.test(file)), named, dirname(named), fact.env, fact.cuda.test(file)));
    }
  }
  return loads;
}

function plugin(role: RuntimeLoadRole, path: string, directory: string, from: string, cuda: boolean): CallerLoad {
  return {names: [path], role, source: 'strings', priority: role.impact === 'library' ? 'required' : role.impact === 'feature' ? 'recommended' : 'suggested',
    description: `${role.what}, ${role.when}`, ...(role.feature ? {feature: role.feature} : {}), plugin: {directory, from, cuda}};
}

/** Every object of `p`'s start with the loads its file declares or names, templates included (for `check --json`). */
export function declaredLoads(p: LoaderProcess): Array<{caller: LoadedObject; loads: CallerLoad[]}> {
  // Asked twice of each checked file's process (its loads modelled, then listed in the report):
  // the start of a process does not change once run, so it is read once.
  let out = declared.get(p);
  if (out && out.startup === p.startupScopeLength) return out.loads;
  const loads: Array<{caller: LoadedObject; loads: CallerLoad[]}> = [];
  for (const caller of p.scope.slice(0, p.startupScopeLength)) {
    if (caller.role === 'interp') continue;
    const theirs = loadsOf(p, caller);
    if (theirs.length > 0) loads.push({caller, loads: theirs});
  }
  declared.set(p, out = {startup: p.startupScopeLength, loads});
  return loads;
}

const declared = new WeakMap<LoaderProcess, {startup: number; loads: Array<{caller: LoadedObject; loads: CallerLoad[]}>}>();

const IMPACT_RANK: Record<RuntimeLoadRole['impact'], number> = {library: 2, feature: 1, optional: 0};

/**
 * Every run-time load of the objects of `p` (the checked file's process, started without a
 * dlopen of its own), each modelled as `fresh()` (the same start) followed by that one dlopen,
 * and checked as the loader would check it: the name found, the versions and symbols of what it
 * brings (RTLD_NOW, as `ldd -r` binds). Loads whose name is already loaded in `p` reuse that object.
 * A load with alternatives (a note's soname list) is the first name the search finds, else the
 * first name. Several callers loading one name that resolves to one file (libcuda.so.1 from
 * libcudart, cuBLAS, NCCL...) each keep their edge, and its problems are said once, by the caller
 * with the most at stake (the first of them in load order).
 */
export function runtimeLoads(p: LoaderProcess, fresh: () => LoaderProcess, memo: SymbolMemo): RuntimeLoad[] {
  const loads: RuntimeLoad[] = [];
  const seen = new Set<string>();
  for (const {caller, loads: wanted} of declaredLoads(p)) {
    for (const want of wanted) {
      if (want.template) continue;
      const key = `${caller.inode}\0${want.names.join('\0')}`;
      if (seen.has(key)) continue;
      seen.add(key);
      let modelled: RuntimeLoad | null = null;
      for (const name of want.names) {
        const load = modelLoad(fresh, caller, name, want.role, memo);
        if (load && (modelled === null || (!modelled.edge.object && load.edge.object))) modelled = load;
        if (modelled?.edge.object) break;
      }
      if (!modelled) continue;
      // An optional plugin that is not there is what the caller expects.
      const missing = !modelled.edge.object && modelled.findings.some((f) => f.kind === 'not-found' && f.edge === modelled!.edge);
      if (modelled.role.impact === 'optional' && missing) continue;
      loads.push(modelled);
    }
  }
  sayOnce(loads);
  return loads;
}

function modelLoad(fresh: () => LoaderProcess, caller: LoadedObject, name: string, declared: RuntimeLoadRole, memo: SymbolMemo): RuntimeLoad | null {
  const q = fresh();
  const twin = q.scope.find((o) => o.inode === caller.inode && o.role !== 'interp');
  if (!twin || q.mainStop) return null;
  const startup = new Set(q.scope.slice(0, q.startupScopeLength));
  const before = new Set(q.objects);
  const edge = q.loadAtRunTime(twin, name);
  const role = noDriverRole(declared, name, edge, q.platform.sysroot);
  const findings = findProblems(q, memo).filter((f) => f.edge === edge || !startup.has(f.object));
  // A libcuda.so.1 the loaded file brings as a dependency (ggml's libggml-cuda.so links it) is
  // judged as a loaded one is: the toolkit's stub there fails that plugin's CUDA as it would fail
  // the caller's own calls (plugin-dirs.test.ts: the CUDA backend loads, CUDA does not initialise).
  const brought = edge.object ? q.objects.filter((o) => o !== edge.object && !before.has(o) && o.info.soname === 'libcuda.so.1') : [];
  const checks = edge.object ? [...releaseChecks(q, twin, edge.object), ...brought.flatMap((o) => libcudaChecks(q, o))] : [];
  return {caller: twin, name, role, process: q, edge, findings, checks};
}

/** One name, one outcome (the file found, or none): its problems said by one caller, the one with the most at stake. */
function sayOnce(loads: RuntimeLoad[]): void {
  const best = new Map<string, RuntimeLoad>();
  const outcome = (l: RuntimeLoad) => `${l.name}\0${l.edge.object?.inode ?? l.edge.errorPath ?? ''}`;
  for (const l of loads) {
    const k = outcome(l);
    const b = best.get(k);
    if (!b || IMPACT_RANK[l.role.impact] > IMPACT_RANK[b.role.impact]) best.set(k, l);
  }
  for (const l of loads) {
    if (best.get(outcome(l)) === l) continue;
    l.findings = [];
    l.checks = [];
  }
}

/**
 * The driver's libcuda.so.1 not found on a machine without an NVIDIA kernel module (a build host,
 * a login node, a container started without GPUs): no libcuda could work there, so what is lost is
 * CUDA on this machine, not the library: a feature, as on the problem explain/ makes of it (the
 * edge and the problem carry one impact). With a module loaded it stays what the caller cannot work without.
 */
function noDriverRole(role: RuntimeLoadRole, name: string, edge: Edge, sysroot: string): RuntimeLoadRole {
  // An optional load stays optional: its absence is what the caller expects, driver or not.
  if (!DRIVER_LIBRARIES.has(name) || role.impact === 'optional' || edge.object || edge.errorPath || nvidiaModuleLoaded(sysroot)) return role;
  return {...role, impact: 'feature', feature: NO_DRIVER_FEATURE};
}

/** "libcudart.so.12 dlopens libcuda.so.1 at the first CUDA call". */
export function describeLoad(load: RuntimeLoad): string {
  return `${basename(load.caller.path)} dlopens ${load.name} ${load.role.when}`;
}
