import {basename} from 'node:path';
import {constantStrings} from '../read/elf/rodata-strings.js';
import type {Edge, LoadedObject, LoaderProcess} from '../search/loader-process.js';
import {findProblems} from '../bind/find-problems.js';
import type {Finding} from '../bind/finding.js';
import type {SymbolMemo} from '../bind/symbol-memo.js';
import {nvidiaModuleLoaded} from '../read/machine/nvidia-driver.js';
import {familyOf, NO_DRIVER_FEATURE, type RuntimeLoadRole} from './families.js';
import {releaseChecks, type ReleaseCheck} from './release-checks.js';

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

/** Per file identity: the names a caller passes to dlopen, read once (a libnvrtc's .rodata is 8 MB). */
const namesByInode = new Map<string, string[]>();

function dlopenNames(p: LoaderProcess, caller: LoadedObject, loads: RegExp): string[] {
  let names = namesByInode.get(caller.inode);
  if (names === undefined) {
    try {
      names = constantStrings(p.ctx.view.hostPath(caller.path) ?? caller.path, loads);
    } catch {
      // A file the loader mapped but whose strings cannot be read: nothing known to be loaded.
      names = [];
    }
    namesByInode.set(caller.inode, names);
  }
  return names;
}

/**
 * Every run-time load of the objects of `p` (the checked file's process, started without a
 * dlopen of its own), each modelled as `fresh()` (the same start) followed by that one dlopen,
 * and checked as the loader would check it: the name found, the versions and symbols of what it
 * brings (RTLD_NOW, as `ldd -r` binds). Loads whose name is already loaded in `p` reuse that object.
 */
export function runtimeLoads(p: LoaderProcess, fresh: () => LoaderProcess, memo: SymbolMemo): RuntimeLoad[] {
  const loads: RuntimeLoad[] = [];
  const seen = new Set<string>();
  for (const caller of p.scope.slice(0, p.startupScopeLength)) {
    if (caller.role === 'interp') continue;
    const family = familyOf(caller.info.soname);
    if (!family) continue;
    for (const name of dlopenNames(p, caller, family.loads)) {
      const key = `${caller.inode}\0${name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const q = fresh();
      const twin = q.scope.find((o) => o.inode === caller.inode && o.role !== 'interp');
      if (!twin || q.mainStop) continue;
      const startup = new Set(q.scope.slice(0, q.startupScopeLength));
      const edge = q.loadAtRunTime(twin, name);
      const role = noDriverRole(family.role(name), name, edge, q.platform.sysroot);
      const findings = findProblems(q, memo).filter((f) => f.edge === edge || !startup.has(f.object));
      // An optional plugin that is not there is what the caller expects.
      const missing = !edge.object && findings.some((f) => f.kind === 'not-found' && f.edge === edge);
      if (role.impact === 'optional' && missing) continue;
      loads.push({caller: twin, name, role, process: q, edge, findings, checks: edge.object ? releaseChecks(q, twin, edge.object) : []});
    }
  }
  return loads;
}

/**
 * The driver's libcuda.so.1 not found on a machine without an NVIDIA kernel module (a build host,
 * a login node, a container started without GPUs): no libcuda could work there, so what is lost is
 * CUDA on this machine, not the library: a feature, as on the problem explain/ makes of it (the
 * edge and the problem carry one impact). With a module loaded it stays what the caller cannot work without.
 */
function noDriverRole(role: RuntimeLoadRole, name: string, edge: Edge, sysroot: string): RuntimeLoadRole {
  if (name !== 'libcuda.so.1' || edge.object || edge.errorPath || nvidiaModuleLoaded(sysroot)) return role;
  return {...role, impact: 'feature', feature: NO_DRIVER_FEATURE};
}

/** "libcudart.so.12 dlopens libcuda.so.1 at the first CUDA call". */
export function describeLoad(load: RuntimeLoad): string {
  return `${basename(load.caller.path)} dlopens ${load.name} ${load.role.when}`;
}
