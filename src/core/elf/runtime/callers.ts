import {basename} from 'node:path';
import type {ElfInfo} from '../read/elf/types.js';
import {dlopenNotesIn, type DlopenNote, type DlopenPriority} from '../read/elf/dlopen-notes.js';
import {codeContains, constantLibraryStringsIn, constantMarkers, constantStrings} from '../read/elf/rodata-strings.js';
import {withSections} from '../read/elf/sections.js';
import {DLOPEN_WRAPPERS, FACT_MARKERS, isCudaStackName, listsDirectories, ncclNetPluginNames, ncclNetPluginRole, PLUGIN_DIRECTORIES, roleOf,
  type PluginDirectoryFact, type RuntimeEnv, type RuntimeLoadRole} from './families.js';

/**
 * What one object loads with dlopen, read from its own file, whatever its name:
 * 1. declared: its `.note.dlopen` metadata (read/elf/dlopen-notes.ts), taken as written: a
 *    'required' load the object cannot work without, the others the feature they name;
 * 2. else found: an object that imports dlopen or dlmopen (any version), or a function that calls
 *    it for its caller (families.ts DLOPEN_WRAPPERS), and whose constant strings name a library of
 *    the CUDA stack, loads the library names of its strings: whole names ("libcuda.so.1"), prefixes
 *    completed with its CUDA major ("libnvrtc.so." -> "libnvrtc.so.12"), and templates
 *    ("libnccl-net-%s.so", reported, never searched). When and at what cost come from families.ts.
 * An object that imports no dlopen loads nothing, whatever its strings; one whose strings name no
 * CUDA library is not a CUDA caller, whatever it imports.
 */
export interface CallerLoad {
  /** The names it tries, in order (a note's alternatives); one name otherwise. */
  names: string[];
  role: RuntimeLoadRole;
  source: 'note' | 'strings';
  /** For a declared load: its priority as written; for a found one, from the role. */
  priority: DlopenPriority;
  description: string;
  /** The feature it serves, as declared, or as families.ts words it (absent: the caller's own work). */
  feature?: string;
  /** A printf template ("libnccl-net-%s.so"): the name depends on the environment, so it is not searched. */
  template?: boolean;
  /** A plugin of a directory the caller lists (runtime-loads.ts pluginLoads): its directory, and whether it is the CUDA one. */
  plugin?: {directory: string; from: string; cuda: boolean};
}

interface FileReading {
  notes: DlopenNote[];
  names: string[];
  /** The distinctive strings of families.ts it carries. */
  markers: string[];
  /** For a caller that lists plugin directories (families.ts PLUGIN_DIRECTORIES): the fact and the strings it reads. */
  plugins: Array<{fact: PluginDirectoryFact; strings: string[]}>;
}

/** Per file identity (the cache key of every reader here): what its file declares and names, read once. */
const readings = new Map<string, FileReading>();

const dlopenImporters = new WeakMap<ElfInfo, boolean>();

/**
 * True when the object can call dlopen: it imports dlopen or dlmopen (any version), or a wrapper of
 * it. Asked of every object of every modelled process (one parsed object is shared by many): kept
 * per object, and the wrappers' patterns tried only on names of their prefix (a first check of 473
 * libraries spent 115 ms here).
 */
export function importsDlopen(info: ElfInfo): boolean {
  let known = dlopenImporters.get(info);
  if (known === undefined) {
    known = info.symbols.some((s) => !s.defined && (s.name === 'dlopen' || s.name === 'dlmopen'
      || (s.name.startsWith('_ZN') && DLOPEN_WRAPPERS.some((w) => w.test(s.name)))));
    dlopenImporters.set(info, known);
  }
  return known;
}

function reading(info: ElfInfo, hostPath: string, inode: string, callerName: string): FileReading {
  let r = readings.get(inode);
  if (r) return r;
  // The NVIDIA driver's own libraries (libcuda.so.1, libnvidia-*) name what the driver may load for
  // itself (EGL and GLX interop, Tegra's libnvrm_*, the debugger, OpenSSL for confidential computing):
  // the driver's installation brings those, and a CUDA program's check is not theirs to judge; listing
  // them put twenty warnings on a healthy PyTorch (a check of the Debian torch image, 2026-12-06).
  // Nor are they plugin loaders of PLUGIN_DIRECTORIES: their tens of MB of constant data are not read.
  if (isDriverLibrary(info.soname ?? callerName)) {
    r = {notes: [], names: [], markers: [], plugins: []};
    readings.set(inode, r);
    return r;
  }
  let notes: DlopenNote[] = [];
  let names: string[] = [];
  let markers: string[] = [];
  try {
    // Opened once for both readings: its header and section headers read once.
    withSections(hostPath, (o) => {
      try {
        notes = dlopenNotesIn(o);
      } catch {
        // Metadata that does not follow the specification declares nothing: the strings decide.
      }
      if (notes.length > 0) return;
      try {
        // Each marker costs one more memchr-speed look at every piece of the constant data (libLLVM's
        // is 67 MB), so the plugin directories' are looked for only in objects that list directories,
        // and of each fact only its first marker here: pluginFacts looks for the others only where
        // that one is (a first check of 473 libraries spent a fifth of its time on markers).
        // The callers' facts' markers (families.ts FACT_MARKERS) only choose the role of a CUDA
        // library the object names (callerLoads): looked for only where it names one.
        const firstPluginMarkers = listsAnyDirectory(info) ? PLUGIN_DIRECTORIES.map((f) => f.carries[0]!) : [];
        ({names, markers} = constantLibraryStringsIn(o, firstPluginMarkers, {markers: FACT_MARKERS, when: isCudaStackName}));
      } catch {
        // A file the loader mapped but whose strings cannot be read: nothing known to be loaded.
      }
    });
  } catch {
    // A file that cannot be opened or whose headers cannot be read: it declares nothing, and nothing is known to be loaded.
  }
  r = {notes, names, markers, plugins: notes.length === 0 ? pluginFacts(info, hostPath, markers) : []};
  readings.set(inode, r);
  return r;
}

const PRIORITY_OF: Record<RuntimeLoadRole['impact'], DlopenPriority> = {library: 'required', feature: 'recommended', optional: 'suggested'};

/**
 * The loads of one object of the modelled process. `hostPath` is where its bytes are read,
 * `inode` its identity, `cudaMajorGiven` the CUDA major its prefixes are completed with (null: none
 * known, and a prefix is not completed), or how to find it: found only for a caller with a prefix
 * (every object that can call dlopen is asked, in every process of a check).
 */
export function callerLoads(info: ElfInfo, hostPath: string, inode: string, callerName: string, cudaMajorGiven: string | null | (() => string | null), env: RuntimeEnv = {}): CallerLoad[] {
  if (!importsDlopen(info)) return [];
  const {notes, names, markers} = reading(info, hostPath, inode, callerName);
  if (notes.length > 0) return notes.map((n) => declared(n));
  if (!names.some(isCudaStackName)) return [];
  const own = new Set([info.soname, ...info.needed]);
  const loads: CallerLoad[] = [];
  const seen = new Set<string>();
  for (const raw of names) {
    let name = raw;
    // A template the environment completes (NCCL_NET_PLUGIN): the names it makes, tried in order.
    const completed = ncclNetPluginNames(raw, env);
    if (completed && !seen.has(raw)) {
      seen.add(raw);
      const role = ncclNetPluginRole(env);
      loads.push({names: completed, role, source: 'strings', priority: PRIORITY_OF[role.impact], description: `${role.what}, ${role.when}`, ...(role.feature ? {feature: role.feature} : {})});
      continue;
    }
    if (name.endsWith('.')) {
      if (typeof cudaMajorGiven === 'function') cudaMajorGiven = cudaMajorGiven();
      const cudaMajor = cudaMajorGiven;
      if (cudaMajor === null) continue;
      name = `${name}${cudaMajor}`;
    }
    if (own.has(name) || seen.has(name)) continue;
    seen.add(name);
    const role = roleOf(name, callerName, markers);
    loads.push({names: [name], role, source: 'strings', priority: PRIORITY_OF[role.impact], description: `${role.what}, ${role.when}`, ...(role.feature ? {feature: role.feature} : {}), ...(name.includes('%') ? {template: true} : {})});
  }
  return loads;
}

/** libcuda.so.1 (the driver's, not the toolkit's stub, which imports no dlopen) and the driver's libnvidia-*.so.*. */
function isDriverLibrary(soname: string): boolean {
  return /^libcuda\.so(\.|$)/.test(soname) || /^libnvidia-[a-z0-9-]+\.so(\.|$)/.test(soname) || /^libcudadebugger\.so(\.|$)/.test(soname);
}

function declared(n: DlopenNote): CallerLoad {
  const first = n.soname[0]!;
  const what = n.description ?? first;
  const role: RuntimeLoadRole = n.priority === 'required'
    ? {what, when: 'when it needs it (declared required in its .note.dlopen)', impact: 'library'}
    : {what, when: `when it needs it (declared ${n.priority} in its .note.dlopen)`, impact: 'feature', feature: n.feature ?? n.description ?? first};
  return {names: n.soname, role, source: 'note', priority: n.priority, description: n.description ?? '', ...(n.feature ? {feature: n.feature} : {})};
}

/** The CUDA major of a caller: that of the libcudart it needs, else of the one the process loaded. */
export function cudaMajorOf(info: ElfInfo, loadedSonames: Array<string | null>): string | null {
  for (const name of [...info.needed, ...loadedSonames]) {
    const m = /^libcudart\.so\.(\d+)$/.exec(name ?? '');
    if (m) return m[1]!;
  }
  return null;
}

/**
 * The plugin directories an object lists, by what its file does (families.ts PLUGIN_DIRECTORIES):
 * it imports dlopen and a directory listing, carries the fact's strings, and its bytes hold the
 * plugins' prefix. Each with the constant strings the fact reads (its directories, its backend names).
 */
export function pluginCallers(info: ElfInfo, hostPath: string, inode: string): Array<{fact: PluginDirectoryFact; strings: string[]}> {
  if (!importsDlopen(info)) return [];
  return reading(info, hostPath, inode, info.soname ?? basename(hostPath)).plugins;
}

const directoryListers = new WeakMap<ElfInfo, boolean>();

/** The object imports a directory listing (families.ts listsDirectories), kept per parsed object. */
function listsAnyDirectory(info: ElfInfo): boolean {
  let known = directoryListers.get(info);
  if (known === undefined) directoryListers.set(info, known = info.symbols.some((s) => !s.defined && listsDirectories(s.name)));
  return known;
}

function pluginFacts(info: ElfInfo, hostPath: string, markers: readonly string[]): Array<{fact: PluginDirectoryFact; strings: string[]}> {
  if (!importsDlopen(info) || !listsAnyDirectory(info)) return [];
  const out: Array<{fact: PluginDirectoryFact; strings: string[]}> = [];
  for (const fact of PLUGIN_DIRECTORIES) {
    if (!markers.includes(fact.carries[0]!)) continue;
    try {
      const rest = fact.carries.slice(1);
      if (constantMarkers(hostPath, rest).length < rest.length) continue;
      const prefixThere = fact.prefixIn === 'code'
        ? codeContains(hostPath, Buffer.from(fact.prefix, 'latin1'))
        : constantStrings(hostPath, new RegExp(fact.prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).length > 0;
      if (!prefixThere) continue;
      out.push({fact, strings: fact.stringsPattern ? constantStrings(hostPath, fact.stringsPattern) : []});
    } catch {
      // Its bytes cannot be read: it is not known to list plugins.
    }
  }
  return out;
}
