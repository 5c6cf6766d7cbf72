import {closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync} from 'node:fs';
import {basename, dirname, join} from 'node:path';
import type {Problem} from '../report-types.js';
import type {ElfInfo} from '../read/elf/types.js';
import type {Finding} from '../bind/finding.js';
import {cachedElf} from '../cache/file-cache.js';
import {readElfSync} from '../read/elf/index.js';
import type {Candidate, Edge, LoadedObject, LoaderProcess} from '../search/loader-process.js';
import {quoteSh} from '../../text/quote.js';
import {defines, definesVersion} from '../bind/symbols.js';
import {describeNonElf} from '../search/check-targets.js';
import {splitLdLibraryPath} from '../search/search-path.js';
import {MISALIGNED} from '../read/elf/segments.js';
import {compareVersions, parseVersion} from '../../versions/version.js';
import {kernelDriverVersion, nvidiaModuleLoaded} from '../read/machine/nvidia-driver.js';
import {DRIVER_LIBRARY_SYMBOLS, NO_DRIVER_FEATURE} from '../runtime/families.js';

/**
 * Turns a finding into what a user can act on: the file the loader picks and by which rule,
 * the candidate that rule shadowed (and whether it would have worked), and the fix.
 */
export interface ExplainContext {
  /** The LD_LIBRARY_PATH assumed for the check. */
  ldLibraryPath?: string;
  /** $CUDAENV_DIR/versions: LD_LIBRARY_PATH entries under it belong to a cudaenv toolkit. */
  storeVersionsDir?: string;
  /** The current directory the check assumes (what empty search-path entries mean). */
  cwd?: string;
}

/** "torch's libcusparse.so.12", "the nvidia-cusparse wheel's libcusparse.so.12", or the bare file name. */
export function describeObject(path: string): string {
  const m = /\/site-packages\/(?:nvidia\/([^/]+)|([^/]+))\//.exec(path);
  if (m?.[1]) return `the nvidia-${m[1]} wheel's ${basename(path)}`;
  if (m?.[2]) return `${m[2]}'s ${basename(path)}`;
  return basename(path);
}

/** The shipping CUDA release of a library by its soname, where the soname's major number is the CUDA major. */
function cudaMajorOf(name: string): {component: string; majors: string[]} | undefined {
  const m = /^lib(cudart|cupti|cublas|cublasLt|cusparse|nvJitLink|nvrtc|cusolver|cufft|curand|npp\w*|nvToolsExt)\.so\.(\d+)/.exec(name);
  if (!m) return undefined;
  const soMajor = m[2];
  // These sonames carry the CUDA major number (libcudart.so.11.0, libcupti.so.12, libcublas.so.12, ...),
  // except cuSPARSE: CUDA 13 still ships libcusparse.so.12 (its 12.6 series; NVIDIA's 13.0 manifests).
  if (m[1] === 'cusparse' && soMajor === '12') return {component: m[1], majors: ['12', '13']};
  if (['cudart', 'cupti', 'cublas', 'cublasLt', 'cusparse', 'nvJitLink', 'nvrtc'].includes(m[1]) || m[1].startsWith('npp')) {
    return {component: m[1], majors: [soMajor]};
  }
  return undefined;
}

/**
 * The pip wheel that brings a component for one CUDA major: `-cu11`/`-cu12` suffixed up to 12;
 * from CUDA 13 the names are unsuffixed (the `-cu13` names are stubs that fail to install) and the
 * libraries land in nvidia/cu13/lib.
 */
function pipWheel(component: string, major: string): string {
  const base = component.startsWith('npp') ? 'nvidia-npp'
    : ({cudart: 'nvidia-cuda-runtime', cupti: 'nvidia-cuda-cupti', nvrtc: 'nvidia-cuda-nvrtc', nvJitLink: 'nvidia-nvjitlink', cublasLt: 'nvidia-cublas'} as Record<string, string>)[component]
      ?? `nvidia-${component.toLowerCase()}`;
  if (Number(major) < 13) return `${base}-cu${major}`;
  // Unsuffixed names carry every major to come: pinned to this one where the wheel's version is the CUDA major.
  return component === 'cusparse' ? base : `'${base}==${major}.*'`;
}

/** The versions in the cudaenv store whose library directory (lib64, else lib) holds `name`, newest first. */
function storeVersionsWith(name: string, storeVersionsDir: string | undefined): string[] {
  if (!storeVersionsDir || name.includes('/')) return [];
  let labels: string[];
  try {
    labels = readdirSync(storeVersionsDir).filter((l) => !l.startsWith('.'));
  } catch {
    return [];
  }
  const zero = {major: 0, minor: 0, patch: 0};
  const newer = (a: string, b: string) => compareVersions(parseVersion(b) ?? zero, parseVersion(a) ?? zero);
  return labels.filter((l) => ['lib64', 'lib'].some((d) => existsSync(join(storeVersionsDir, l, d, name)))).sort(newer);
}

/** `__nvJitLinkComplete_12_4` → 12.4: NVIDIA versions new entry points in their names. */
function cudaReleaseInSymbol(symbol: string | null): string | undefined {
  const m = symbol ? /_(\d{2})_(\d)$/.exec(symbol) : null;
  return m ? `${Number(m[1])}.${m[2]}` : undefined;
}

/** The cudaenv version label an LD_LIBRARY_PATH entry belongs to, if it is inside the store. */
function storeLabel(dir: string, storeVersionsDir: string | undefined): string | undefined {
  if (!storeVersionsDir) return undefined;
  const prefix = storeVersionsDir.replace(/\/+$/, '') + '/';
  if (!dir.startsWith(prefix)) return undefined;
  return dir.slice(prefix.length).split('/')[0] || undefined;
}

/** An LD_LIBRARY_PATH entry in a sentence: the empty one by what it means. */
function entryWords(entry: string, ctx: ExplainContext): string {
  return entry === '' ? `the empty entry (it means the current directory${ctx.cwd ? `, ${ctx.cwd}` : ''})` : entry;
}

/**
 * The command that removes `entry` from LD_LIBRARY_PATH. The value is split as ld.so splits it
 * (':' and ';'), so an entry written after a ';' is found and the command never repeats the value.
 */
export function dropEntryFix(entry: string, ctx: ExplainContext): string {
  const label = storeLabel(entry, ctx.storeVersionsDir);
  if (label) return `run \`cudaenv use ${label} --ld-library-path none\` (keeps CUDA ${label} without putting its libraries first)`;
  const all = splitLdLibraryPath(ctx.ldLibraryPath);
  const norm = (e: string): string => (e === '' ? '' : e.replace(/\/+$/, '') || '/');
  // An empty entry is dropped with every other empty entry: each one means the current directory.
  const rest = all.filter((e) => norm(e) !== norm(entry));
  const what = entry === '' ? 'remove the empty entry from LD_LIBRARY_PATH (an empty entry makes the loader search the current directory)' : `drop ${entry} from LD_LIBRARY_PATH`;
  if (rest.length === 0) return `run \`unset LD_LIBRARY_PATH\` (it only holds ${entryWords(entry, ctx)})`;
  return `${what}: \`export LD_LIBRARY_PATH=${quoteSh(rest.join(':'))}\``;
}

async function satisfies(c: Candidate, f: Finding): Promise<boolean> {
  try {
    const info = await cachedElf(c.file ?? c.path, c.stat!);
    if (f.kind === 'version-not-found') return definesVersion(info, f.version!);
    if (f.ref) return defines(info, f.ref);
  } catch {
    // unreadable: it would not satisfy anything
  }
  return false;
}

/** The acceptable candidates the search for the edge's name would have reached after the chosen file. */
async function laterCandidates(p: LoaderProcess, edge: Edge, chosen: LoadedObject): Promise<Candidate[]> {
  const out: Candidate[] = [];
  let after = false;
  for (const c of p.candidates(edge.owner, edge.name)) {
    if (c.status !== 'ok') continue;
    if (!after) {
      if (c.path === chosen.path || c.stat && `${c.stat.dev}:${c.stat.ino}` === chosen.inode) after = true;
      continue;
    }
    if (`${c.stat!.dev}:${c.stat!.ino}` === chosen.inode) continue;
    out.push(c);
    if (out.length >= 8) break;
  }
  return out;
}

/**
 * How the loader came to `path` on `edge`, as a clause: the rule, without saying the path twice
 * (an entry as written that is the path itself, an object already loaded under another name).
 */
export function howPicked(edge: Edge, path: string): string {
  const rule = ruleOf(edge, path);
  if (rule.startsWith('already loaded')) return `${path} is ${rule.replace(/^already loaded[:,] (.*)$/, 'already loaded ($1)')}, so the loader takes it without a search`;
  if (edge.preloadFrom && edge.preloadName === path) return `${path} is ${rule}, loaded before anything else`;
  return `The loader picks ${path} by ${rule}`;
}

/** The edge's rule for a report that names `path` beside it: a preload entry that is `path` itself is not written again. */
export function ruleOf(edge: Edge, path: string): string {
  const rule = edge.rule ?? 'the search';
  return edge.preloadFrom && edge.preloadName === path ? rule.replace(`the ${edge.preloadFrom} entry ${path}`, `an entry of ${edge.preloadFrom}`) : rule;
}

export async function explain(p: LoaderProcess, f: Finding, ctx: ExplainContext): Promise<Problem> {
  const problem = await explainFinding(p, f, ctx);
  const program = basename(p.main.path);
  if (f.when) problem.when = f.when;
  if (f.copy) {
    problem.explanation += ` ${basename(f.object.path)} holds its own copy of this data object (a copy relocation), which ld.so fills from the library's definition ` +
      `while the program starts, lazy binding or not${f.when === 'start' ? `: ${program} stops there, before it dlopens anything` : ''}.`;
    return problem;
  }
  if (!f.when) return problem;
  const loaded = p.target === p.main ? '' : ` and dlopens ${basename(p.target.path)}`;
  problem.explanation += f.when === 'start'
    ? ` ${basename(f.object.path)} binds ${f.symbol} while ${program} starts (${whyAtStart(p, f.object)}), so ${program} stops there, before it dlopens anything.`
    : ` ${basename(f.object.path)} binds ${f.symbol} lazily, through a PLT slot at its first call: ${program} starts${loaded}, and stops with "symbol lookup error" only if it calls ${f.symbol}.`;
  if (f.when === 'first-call') problem.summary += ` (bound at its first call)`;
  return problem;
}

/** Why an object the program starts with binds a reference then rather than at its first call. */
function whyAtStart(p: LoaderProcess, obj: LoadedObject): string {
  if (obj.info.bindNow) return 'it is linked with -z now';
  if (p.ctx.bindNow) return 'LD_BIND_NOW is set';
  return 'a GOT or data relocation names it, which ld.so binds when it relocates the object';
}

/**
 * glibc before 2.30 stopped a versioned lookup at the library the version names (./version-file-stop.ts):
 * the symbol moved to another library under the same version, or the reference is weak.
 */
function explainVersionFileStop(problem: Problem, p: LoaderProcess, f: Finding, who: string, provider: LoadedObject, stop: NonNullable<Finding['versionFileStop']>): Problem {
  const glibc = p.platform.glibc ? `glibc ${p.platform.glibc.join('.')}` : 'this glibc';
  const message = `symbol ${f.symbol} version ${f.version} not defined in file ${f.library} with link time reference`;
  const ref = `${f.symbol}@${f.version}`;
  problem.summary = stop.later
    ? `${who} needs ${ref} from ${f.library}, which lacks it: ${glibc} stops there, before ${stop.later.path}, which defines it`
    : `${who} has a weak reference to ${ref}, and ${glibc} fails it at ${f.library}, which lacks it`;
  problem.explanation = `${f.object.path} was linked against a ${f.library} that defined ${ref}, so its reference names that library. ` +
    `The loader looks the symbol up in the global scope, in order, and reaches ${provider.path} first, which lacks it. Before glibc 2.30 the lookup stops there ` +
    `with "${message}"${stop.weak ? ', although the reference is weak' : ''}; 2.30 and later go on${stop.later ? ` and bind ${stop.later.path}` : ' and leave a weak reference unbound'}. The loader here is ${glibc}.`;
  const relink = `relink ${basename(f.object.path)} against the libraries it runs with`;
  problem.fix = stop.later
    ? `${relink}, so that its reference names the one that defines ${f.symbol}; or load ${stop.later.path} before ${f.library}: ` +
      `LD_PRELOAD=${quoteSh(stop.later.path)} (a preloaded object is searched first); or run it with glibc 2.30 or later`
    : `use a ${f.library} that still defines ${ref}, or ${relink} (its reference then asks for no version); or run it with glibc 2.30 or later`;
  return problem;
}

async function explainFinding(p: LoaderProcess, f: Finding, ctx: ExplainContext): Promise<Problem> {
  const problem: Problem = {
    kind: f.kind, object: f.object.path, library: f.library, version: f.version, symbol: f.symbol,
    chosen: null, shadowed: null, explanation: '', fix: null, summary: '',
  };
  const who = describeObject(f.object.path);
  if (f.kind === 'not-found') return explainNotFound(problem, p, f, who, ctx);
  if (f.kind === 'noexec-mount') return explainNoexec(problem, p, f, who, ctx);
  if (f.kind === 'loader-abort' && f.filterLoop) {
    const names = f.filterLoop.map((o) => o.path);
    problem.summary = `ld.so never finishes loading: the filter libraries ${[...new Set(names.map((n) => basename(n)))].join(', ')} name each other as filtees`;
    problem.explanation = `${f.reason}. Each DT_FILTER or DT_AUXILIARY object is put before the object that names it, and one already further on is moved up and walked again: ` +
      'objects that name each other are moved before one another until ld.so runs out of stack and dies of SIGSEGV (or, for `ldd` of a filter library, loads copies until "failed to map segment").';
    problem.fix = `relink one of ${[...new Set(names)].join(', ')} without its -F/-f (DT_FILTER/DT_AUXILIARY) entry, so that the filters no longer form a cycle`;
    return problem;
  }
  if (f.kind === 'loader-abort') {
    const rebuilt = f.symbol !== null;
    problem.chosen = f.provider ? `${f.provider.path}${f.edge?.rule ? ` (${f.edge.rule})` : ''}` : null;
    problem.summary = rebuilt
      ? `ld.so aborts: ${who} asks for ${f.symbol}@${f.version} and ${f.provider!.path} has no symbol versions`
      : `ld.so aborts: ${who} requires versions from ${f.library}, which names no loaded object`;
    problem.explanation = `ld.so stops with "Inconsistency detected by ld.so: ${f.reason}".`;
    problem.fix = rebuilt
      ? `use a ${f.library} built with its symbol versions (the one the program was linked against), or run it with glibc 2.41 or later`
      : `relink ${basename(f.object.path)} with a plain DT_NEEDED name (-l or the soname) and an RPATH/RUNPATH instead of a path in DT_NEEDED (its version requirements are recorded under the path as written)`;
    return problem;
  }
  if (f.kind === 'executable-stack') {
    const header = f.object.info.stackFlags === null ? 'has no PT_GNU_STACK program header (it was linked from an assembler file without a .note.GNU-stack section, or with an old toolchain), which the loader reads as asking for an executable stack'
      : 'has a PT_GNU_STACK program header with PF_X (linked with -z execstack): it asks for an executable stack';
    const glibc = p.platform.glibc ? `glibc ${p.platform.glibc.join('.')}` : 'glibc 2.41 and later';
    const how = f.edge === p.dlopenEdge ? `dlopened by ${p.main.path}` : f.edge?.rule;
    problem.chosen = how ? `${f.object.path} (${how})` : f.object.path;
    const rebuild = `rebuild ${basename(f.object.path)} with -Wl,-z,noexecstack (or give its assembler sources a .note.GNU-stack section); if it does not really run code on the stack, ` +
      `clear the mark: patchelf --clear-execstack ${f.object.path} (patchelf 0.18 or later) or execstack -c ${f.object.path}`;
    if (f.execStack === 'forbidden') {
      // The program itself (mapped by the kernel) is refused by rtld before anything is loaded.
      const program = f.object === p.main && p.main !== p.target;
      problem.summary = `${who} asks for an executable stack, which GLIBC_TUNABLES=glibc.rtld.execstack=0 forbids: ` +
        (program ? '"Fatal glibc error: executable stack is not allowed"' : '"cannot enable executable stack as shared object requires"');
      problem.explanation = `${f.object.path} ${header}. GLIBC_TUNABLES sets glibc.rtld.execstack=0, so the loader (${glibc}) refuses every object that asks for one: ` +
        'the program, the libraries it starts with and the ones it dlopens.';
      problem.fix = `${rebuild}; or take glibc.rtld.execstack=0 out of GLIBC_TUNABLES`;
      return problem;
    }
    problem.summary = `${who} asks for an executable stack, which a dlopen no longer makes: "cannot enable executable stack as shared object requires"`;
    problem.explanation = `${f.object.path} ${header}. Since glibc 2.41, dlopen no longer makes the stack of a running program executable: ` +
      `loading such an object fails, unless the program already started with an executable stack. The loader here is ${glibc}, and ${basename(p.main.path)} did not start with one.`;
    problem.fix = `${rebuild}; or allow it for this program: GLIBC_TUNABLES=glibc.rtld.execstack=2 (glibc 2.42 and later, and Debian's 2.41)`;
    return problem;
  }
  if (f.kind === 'static-tls') return explainStaticTls(problem, p, f, who);
  if (f.kind === 'cpu-isa-level') {
    const need = isaLevelName(f.object.info.x86IsaNeeded);
    const have = isaLevelName(p.platform.x86IsaBits ?? 1);
    problem.chosen = f.edge?.rule ? `${f.object.path} (${f.edge.rule})` : f.object.path;
    problem.summary = `${who} is built for ${need}, and this CPU has only ${have}: the loader stops with "CPU ISA level is lower than required"`;
    problem.explanation = `${f.object.path} says in its GNU property note (GNU_PROPERTY_X86_ISA_1_NEEDED) that it needs ${need}. ` +
      `glibc's loader (2.33 and later) checks that mark against the CPU before relocating and refuses the object: ` +
      `"${f.object.path}: CPU ISA level is lower than required". The loader reports ${have} for this CPU.`;
    problem.fix = f.object.info.x86IsaNeeded & ~0xf
      ? `reinstall or rebuild ${basename(f.object.path)}: its mark names ISA bits no glibc knows, so no CPU can load it`
      : `install a build of ${basename(f.object.path)} for ${have} or lower (builds for higher levels belong in ` +
        `glibc-hwcaps/x86-64-vN subdirectories, which the loader searches only on CPUs that have the level), or run it on a CPU with ${need}`;
    return problem;
  }
  if (f.kind === 'unversioned-undefined-symbol') {
    const missing = missingDefiner(f);
    if (missing) {
      // Not left to the loading program: the library that is not found would define it, and that
      // finding says so (issue 42, gap of item 4): the report counts it under the missing library.
      problem.kind = 'undefined-symbol';
      problem.library = missing;
      problem.summary = `${who} needs ${f.symbol}, which ${missing} would define, and ${missing} is not found`;
      problem.explanation = `${f.object.path} references ${f.symbol} without a version; it is an export of ${missing}, which ${f.object.path} needs and the loader cannot find.`;
      problem.fix = null;
      return problem;
    }
    const shadowed = await shadowedOwnCopy(p, f);
    if (shadowed) return explainShadowedUnversioned(problem, p, f, who, shadowed, ctx);
    problem.summary = `${who} needs symbol ${f.symbol}, which no loaded object defines`;
    problem.explanation = `${f.object.path} references ${f.symbol} without a version and nothing in the global scope ` +
      `(${p.scope.length} objects) defines it. This is normal for plugins and Python extension modules, which get ` +
      'such symbols from the program that loads them; it fails only if that program does not define it either.';
    problem.fix = 'check with the program that loads it first in the scope (`--exe /path/to/python`), or link the library against the one that defines it';
    return problem;
  }
  const provider = f.provider;
  const edge = f.edge;
  const what = f.kind === 'version-not-found' ? `version ${f.version}` : `${f.symbol}${f.version ? ` (version ${f.version})` : ''}`;
  if (!provider || !edge) {
    problem.summary = `${who} needs ${what}, which no loaded object defines`;
    problem.explanation = `${f.object.path} requires ${what}${f.library ? ` from ${f.library}` : ''}, and nothing in the global scope defines it.`;
    problem.fix = f.library ? `make a ${f.library} that defines ${f.symbol ?? f.version} the one the loader finds` : null;
    return problem;
  }
  const rule = ruleOf(edge, provider.path);
  problem.chosen = `${provider.path} (${rule})`;
  const stop = f.versionFileStop;
  if (stop && (stop.later || stop.weak)) return explainVersionFileStop(problem, p, f, who, provider, stop);
  const later = edge.via === 'loaded' || edge.via === 'preload' ? [] : await laterCandidates(p, edge, provider);
  let better: Candidate | undefined;
  for (const c of later) {
    if (await satisfies(c, f)) {
      better = c;
      break;
    }
  }
  const shadowedCandidate = better ?? later[0];
  if (shadowedCandidate) {
    problem.shadowed = `${shadowedCandidate.path} (${shadowedCandidate.rule}), which ${better ? 'would satisfy it' : 'lacks it too'}`;
  }
  const lacks = f.kind === 'version-not-found' ? `does not define version ${f.version}` : `lacks ${f.symbol}${f.version ? `@${f.version}` : ''}`;
  const entry = edge.via === 'ld_library_path' ? edge.ldEntry : undefined;
  const release = cudaReleaseInSymbol(f.symbol);
  const preloadFrom = edge.via === 'preload' ? edge.preloadFrom : undefined;
  problem.summary = preloadFrom
    ? `${preloadFrom} makes ${who} bind ${provider.path}, which ${lacks.replace(/@.*$/, '')}`
    : entry === ''
    ? `LD_LIBRARY_PATH's empty entry (the current directory) makes ${who} bind ${provider.path}, which ${lacks.replace(/@.*$/, '')}`
    : entry !== undefined
    ? `this LD_LIBRARY_PATH makes ${who} bind ${provider.path}, which ${lacks.replace(/@.*$/, '')}`
    : `${who} binds ${provider.path}, which ${lacks}`;
  problem.explanation = `${f.object.path} needs ${what} from ${f.library}. ${howPicked(edge, provider.path)}; that file ${lacks}.` +
    (shadowedCandidate ? ` It is found before ${shadowedCandidate.path} (${shadowedCandidate.rule}), which ${better ? 'defines it and would be used without that entry' : 'lacks it as well'}.` : '') +
    (preloadFrom ? ` A preloaded object is loaded before anything else, and every later need of ${f.library} binds it without a search.` : '');
  if (preloadFrom) {
    problem.fix = preloadFrom === 'LD_PRELOAD'
      ? `take ${edge.preloadName ?? edge.name} out of LD_PRELOAD (\`unset LD_PRELOAD\` if it is the only entry)`
      : `take ${edge.preloadName ?? edge.name} out of /etc/ld.so.preload (as root): it is preloaded into every program`;
    if (release) problem.fix += `, or preload a ${f.library} from CUDA ${release} or newer`;
  } else if (entry !== undefined && (better || entry === '')) {
    // An empty entry is nearly always an accident (`$LD_LIBRARY_PATH:` with the variable unset): removing it comes first.
    problem.fix = dropEntryFix(entry, ctx);
    if (!better) problem.fix += `; no other ${f.library} on the search path defines ${f.kind === 'version-not-found' ? f.version : f.symbol}, so also install one that does`;
    // The other way out: a toolkit new enough (for a store entry, `cudaenv use` of it replaces the entry).
    if (release) problem.fix += `, or \`cudaenv use ${release}\` (CUDA ${release} or newer provides it)`;
  } else if (entry !== undefined) {
    // Nothing after this entry satisfies it (or nothing else is found at all): dropping the entry would not help.
    const need = f.kind === 'version-not-found' ? `version ${f.version}` : f.symbol;
    problem.fix = release
      ? `\`cudaenv use ${release}\` (CUDA ${release} or newer provides it), or put a directory holding a newer ${f.library} before ${entry} on LD_LIBRARY_PATH`
      : `put a directory holding a ${f.library} that defines ${need} before ${entry} on LD_LIBRARY_PATH (no other ${f.library} on the search path has it), or \`cudaenv use\` a toolkit whose ${f.library} is new enough`;
  } else if (edge.via === 'ld.so.cache' && better) {
    // The cache's entry comes first: the configuration file that lists its directory is the cause.
    problem.fix = `${cacheEntryFix(provider.path, p.platform.sysroot)}, so that ${better.path} is found`;
  } else if (release) {
    problem.fix = `use a ${f.library} from CUDA ${release} or newer (\`cudaenv use ${release}\`, or upgrade the package that ships ${provider.path})`;
  } else {
    problem.fix = `install a newer ${f.library} that defines ${f.kind === 'version-not-found' ? f.version : f.symbol}, or put the directory of one first on LD_LIBRARY_PATH`;
  }
  return problem;
}

/**
 * The library an unversioned reference nothing loaded defines would have come from: a DT_NEEDED
 * library of the object that is not found and whose exports are known by name (libcuda.so.1,
 * DRIVER_LIBRARY_SYMBOLS). Null otherwise: what an unknown missing library defines is not known.
 */
function missingDefiner(f: Finding): string | null {
  for (const edge of f.object.edges) {
    if (edge.object || edge.ignored || edge.kind !== 'needed') continue;
    if (DRIVER_LIBRARY_SYMBOLS.get(edge.name)?.test(f.symbol ?? '')) return edge.name;
  }
  return null;
}

/** An unversioned reference shadowed: the edge, the object it binds, the copy the object's own search would load, and what put the other first. */
interface Shadowing {
  edge: Edge;
  provider: LoadedObject;
  own: Candidate;
  /** ld_library_path: an entry searched before the object's DT_RUNPATH; preload: an LD_PRELOAD or /etc/ld.so.preload object of that SONAME; loaded: an object already loaded by another search. */
  by: 'ld_library_path' | 'preload' | 'loaded';
}

/** Per edge bound without a search (preload, already loaded): the file the object's own search would pick (null: none, or the same file). */
const ownPicks = new WeakMap<Edge, Candidate | null>();

function ownPick(p: LoaderProcess, edge: Edge, provider: LoadedObject): Candidate | null {
  let pick = ownPicks.get(edge);
  if (pick === undefined) {
    pick = null;
    // The first file ld.so would accept for this name, had nothing of that name been loaded: the
    // object's DT_RPATH (and its loaders'), LD_LIBRARY_PATH, its DT_RUNPATH, ld.so.cache, the system directories.
    for (const c of p.candidates(edge.owner, edge.name)) {
      if (c.status !== 'ok') continue;
      if (!c.stat || `${c.stat.dev}:${c.stat.ino}` !== provider.inode) pick = c;
      break;
    }
    ownPicks.set(edge, pick);
  }
  return pick;
}

/**
 * An unversioned reference nothing loaded defines, where the object's own search would have found
 * a library that does (issue 42, item 7): one of its DT_NEEDED names was taken from an
 * LD_LIBRARY_PATH entry, which ld.so searches before DT_RUNPATH, and the copy its DT_RUNPATH (or,
 * below a preload, its DT_RPATH) names defines the symbol; or the name was bound without a search,
 * to an LD_PRELOAD object of that SONAME or to an object already loaded (by the program with --exe,
 * or by an earlier library's own search), and the file the object's own search picks defines it.
 * The real dlopen then fails with "undefined symbol": no loading program is to blame, the entry
 * or the earlier load is. Null when no such copy exists (the reference stays left to the loading program).
 */
async function shadowedOwnCopy(p: LoaderProcess, f: Finding): Promise<Shadowing | null> {
  if (!f.ref) return null;
  for (const edge of f.object.edges) {
    const provider = edge.object;
    if (!provider || edge.kind !== 'needed') continue;
    if (edge.via === 'ld_library_path') {
      for (const c of await laterCandidates(p, edge, provider)) {
        if ((c.via === 'runpath' || c.via === 'rpath') && await satisfies(c, f)) return {edge, provider, own: c, by: 'ld_library_path'};
      }
    } else if ((edge.via === 'preload' || edge.via === 'loaded') && provider.role !== 'interp' && provider !== p.main) {
      const own = ownPick(p, edge, provider);
      if (own && await satisfies(own, f)) return {edge, provider, own, by: provider.role === 'preload' ? 'preload' : 'loaded'};
    }
  }
  return null;
}

function explainShadowedUnversioned(problem: Problem, p: LoaderProcess, f: Finding, who: string, s: Shadowing, ctx: ExplainContext): Problem {
  problem.kind = 'undefined-symbol';
  problem.library = s.edge.name;
  problem.shadowed = `${s.own.path} (${s.own.rule}), which would satisfy it`;
  const fails = `loading fails with "undefined symbol: ${f.symbol}" (a dlopen with RTLD_NOW, \`ldd -r\`), or at its first call.`;
  if (s.by === 'ld_library_path') {
    const entry = s.edge.ldEntry;
    const rule = ruleOf(s.edge, s.provider.path);
    problem.chosen = `${s.provider.path} (${rule})`;
    problem.summary = `${entry === '' ? 'LD_LIBRARY_PATH\'s empty entry (the current directory)' : 'this LD_LIBRARY_PATH'} makes ${who} bind ${s.provider.path}, which lacks ${f.symbol}`;
    problem.explanation = `${f.object.path} needs ${f.symbol} (unversioned) and ${s.edge.name}. The loader picks ${s.provider.path} by ${rule}, which it searches before ` +
      `${f.object.path}'s own ${s.own.via === 'runpath' ? 'DT_RUNPATH' : 'DT_RPATH'}; that file lacks ${f.symbol}, and nothing else loaded defines it. ` +
      `${s.own.path} (${s.own.rule}) defines it and would be used without that entry: ${fails}`;
    problem.fix = entry !== undefined ? `${dropEntryFix(entry, ctx)}, so that ${s.own.path} is found` : `remove ${s.provider.path}, so that ${s.own.path} is found`;
    return problem;
  }
  const first = p.edgeTo(s.provider);
  if (s.by === 'preload') {
    const from = first?.preloadFrom ?? s.edge.preloadFrom ?? 'LD_PRELOAD';
    const name = first?.preloadName ?? s.edge.preloadName ?? s.provider.path;
    problem.chosen = `${s.provider.path} (the ${from} entry ${name})`;
    problem.summary = `${from === 'LD_PRELOAD' ? 'LD_PRELOAD' : '/etc/ld.so.preload'} makes ${who} bind ${s.provider.path}, which lacks ${f.symbol}`;
    problem.explanation = `${f.object.path} needs ${f.symbol} (unversioned) and ${s.edge.name}. ${s.provider.path} is preloaded (the ${from} entry ${name}) with the SONAME ${s.edge.name}, ` +
      `so every later need of ${s.edge.name} binds it without a search; it lacks ${f.symbol}, and nothing else loaded defines it. ` +
      `${f.object.path}'s own search would load ${s.own.path} (${s.own.rule}), which defines it: ${fails}`;
    problem.fix = `${from === 'LD_PRELOAD' ? `take ${name} out of LD_PRELOAD (\`unset LD_PRELOAD\` if it is the only entry)` : `take ${name} out of /etc/ld.so.preload (as root)`}, so that ${s.own.path} is found`;
    return problem;
  }
  // Already loaded: by the program (--exe) as it started, or by an earlier object's own search.
  const byProgram = p.dlopenEdge !== null && p.scope.slice(0, p.startupScopeLength).includes(s.provider);
  const loader = first ? (first.owner === p.main && byProgram ? `the program ${p.main.path}` : first.owner.path) : p.main.path;
  const how = first?.rule ? `, found by ${first.rule}` : '';
  problem.chosen = `${s.provider.path} (already loaded by ${loader}${how})`;
  problem.summary = `${who} binds the ${s.edge.name} ${byProgram ? `${basename(p.main.path)} loaded as it started` : `that ${basename(first?.owner.path ?? p.main.path)} loaded first`}, ${s.provider.path}, which lacks ${f.symbol}`;
  problem.explanation = `${f.object.path} needs ${f.symbol} (unversioned) and ${s.edge.name}. ${loader} loaded ${s.provider.path}${how}${byProgram ? ' before dlopening it' : ' before this need was searched'}, ` +
    `so the loader takes it by name without a search; it lacks ${f.symbol}, and nothing else loaded defines it. ` +
    `${f.object.path}'s own search would load ${s.own.path} (${s.own.rule}), which defines it: ${fails}`;
  problem.fix = `load ${s.own.path} first: LD_PRELOAD=${quoteSh(s.own.path)} (every need of ${s.edge.name} then binds it), ` +
    `or make ${loader} find a ${s.edge.name} that defines ${f.symbol}${first?.rule ? ` (${first.rule} gives it ${s.provider.path})` : ''}`;
  return problem;
}

/** A dlopened object's initial-exec TLS that does not fit in the static TLS block's surplus. */
function explainStaticTls(problem: Problem, p: LoaderProcess, f: Finding, who: string): Problem {
  const t = f.staticTls!;
  const tls = f.object.info.tls!;
  const program = basename(p.main.path);
  const via = t.referrer === f.object ? `${basename(f.object.path)} accesses it` : `${basename(t.referrer.path)} accesses it (${f.symbol})`;
  const fits = tls.align > t.blockAlign;
  problem.summary = `${who} needs ${tls.size} bytes of static TLS, and ${fits ? `its alignment (${tls.align}) exceeds the static TLS block's (${t.blockAlign})` : `only ${t.free} are left after ${program} started`}: "cannot allocate memory in static TLS block"`;
  problem.explanation = `${f.object.path} has a ${tls.size}-byte thread-local block (PT_TLS, aligned to ${tls.align}), and ${via} with the initial-exec model (a static TLS offset in its relocations), ` +
    `so the block must lie at a fixed offset in the static TLS block every thread got when ${program} started. A dlopen can only place it in what that block has left: ` +
    `the surplus glibc adds (${t.surplus} bytes${t.tunable ? '' : ', fixed before glibc 2.32'}) with its alignment padding, less what objects dlopened before it took; ${t.free} bytes here.`;
  const preload = `start the program with it: LD_PRELOAD=${quoteSh(f.object.path)} ${program} (its TLS is then part of the static block)`;
  problem.fix = fits || !t.tunable ? preload
    : `${preload}, or enlarge the surplus: add glibc.rtld.optional_static_tls=${t.optional + t.shortfall} to GLIBC_TUNABLES (now ${t.optional})`;
  return problem;
}

/** x86 ISA level bits (GNU_PROPERTY_X86_ISA_1_*) in words: the highest level they name. */
function isaLevelName(bits: number): string {
  if (bits & ~0xf) return `ISA level bits 0x${bits.toString(16)} (beyond x86-64-v4: unknown to glibc)`;
  if (bits & 8) return 'x86-64-v4';
  if (bits & 4) return 'x86-64-v3';
  if (bits & 2) return 'x86-64-v2';
  return 'the x86-64 baseline';
}

/** The dynamic section of a file the loader refused, as the reader sees it (null: unreadable). */
function readElfDynamic(path: string): ElfInfo['dynamic'] | null {
  try {
    return readElfSync(path).dynamic;
  } catch {
    return null;
  }
}

/** What a file the loader refused is, in words: empty, truncated ELF, a linker script, text. */
function describeBadFile(path: string, reason: string): string {
  let st;
  try {
    st = statSync(path);
  } catch {
    return 'a file that cannot be read';
  }
  if (st.isDirectory()) return 'a directory';
  if (st.size === 0) return 'an empty file, 0 bytes';
  let head = Buffer.alloc(0);
  try {
    const fd = openSync(path, 'r');
    try {
      head = Buffer.alloc(4);
      head = head.subarray(0, readSync(fd, head, 0, 4, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return 'a file that cannot be read';
  }
  if (head.toString('latin1') === '\x7fELF') {
    if (reason === MISALIGNED) return 'an ELF file whose segments are laid out for smaller memory pages than this machine\'s';
    if (/no dynamic section/.test(reason)) {
      return readElfDynamic(path) === 'debug-info' ? 'a separate debug-info file (objcopy --only-keep-debug), not a loadable library'
        : 'an ELF shared object without a dynamic section';
    }
    // A whole ELF file of a kind the loader refuses (an object file, a program, big-endian) is not damaged.
    if (/ET_DYN|position-independent|endian/.test(reason)) return 'an ELF file, but not a shared object the loader can load';
    return `a truncated or damaged ELF file of ${st.size} bytes`;
  }
  const kind = describeNonElf(path);
  return kind === 'not an ELF file' ? `not a shared object: ${st.size} bytes without the ELF magic` : kind;
}

/**
 * An object on a file system mounted noexec: the kernel refuses to map its code (mmap with
 * PROT_EXEC fails with EPERM), so ld.so stops there; a program there is not even started (execve).
 */
function explainNoexec(problem: Problem, p: LoaderProcess, f: Finding, who: string, ctx: ExplainContext): Problem {
  const edge = f.edge!;
  const mount = edge.noexecMount!;
  const remount = `or, if the file system may hold programs, remount it: sudo mount -o remount,exec ${quoteSh(mount)}`;
  if (edge === p.mainStop) {
    const program = p.main !== p.target || p.main.info.interp !== null;
    problem.summary = program
      ? `${who} lies on ${mount}, a file system mounted noexec: the kernel refuses to start it ("Permission denied")`
      : `the loader cannot map ${f.object.path}: "failed to map segment from shared object" (${mount} is mounted noexec)`;
    problem.explanation = `${f.object.path} lies on ${mount}, which is mounted noexec: the kernel refuses to ${program ? 'execute a program' : 'map the code of a library'} from it, ` +
      `whatever its permissions. ${program ? 'Nothing of it runs.' : 'Every program that loads it fails there.'}`;
    problem.fix = `move ${program ? 'it' : 'the library (or its environment)'} to a file system mounted with exec, ${remount}`;
    return problem;
  }
  const bad = edge.errorPath!;
  const name = f.library!;
  problem.chosen = edge.rule ? `${bad} (${edge.rule})` : bad;
  problem.summary = `${who} needs ${dependencyName(edge, name)}, and the loader cannot map ${bad}: "failed to map segment from shared object" (${mount} is mounted noexec)`;
  const next = candidateAfter(p, edge, name, bad, (c) => !p.ctx.noexecMount?.(c.file ?? c.path));
  if (next) problem.shadowed = `${next.path} (${next.rule}), which the loader never reaches`;
  problem.explanation = `${f.object.path} needs ${name}. The loader finds ${bad}${edge.rule ? ` by ${edge.rule}` : ''}, which lies on ${mount}, a file system mounted noexec: ` +
    `the kernel refuses to map its code, so the load fails there without looking further.${next ? ` ${next.path} (${next.rule}) would be loaded without it.` : ''}`;
  const move = `move ${basename(bad)} (or the environment that holds it) to a file system mounted with exec, ${remount}`;
  problem.fix = edge.ldEntry !== undefined && next ? `${dropEntryFix(edge.ldEntry, ctx)}, or ${move}` : move;
  return problem;
}

/**
 * The file a search by name would load if it went past `bad`, where the loader stops (only a
 * search by name goes on; `usable` adds what makes a candidate loadable beyond its headers).
 */
function candidateAfter(p: LoaderProcess, edge: Edge, name: string, bad: string, usable: (c: Candidate) => boolean = () => true): Candidate | undefined {
  if (name.includes('/')) return undefined;
  let after = false;
  for (const c of p.candidates(edge.owner, name)) {
    if (c.path === bad) after = true;
    else if (after && c.status === 'ok' && usable(c)) return c;
  }
  return undefined;
}

/** A dependency's name, saying when it is a filtee (a filter library loads it like DT_NEEDED, and fails without it). */
function dependencyName(edge: Edge, name: string): string {
  return edge.kind === 'filter' ? `${name} (its DT_FILTER filtee)` : name;
}

/**
 * The loader stops at a file it cannot load (empty, truncated, not ELF) on the search path: it
 * fails there with that error and never looks further (open_verify, elf-loader-spec.md §1.8).
 */
function explainStop(problem: Problem, p: LoaderProcess, f: Finding, who: string, ctx: ExplainContext): Problem {
  const edge = f.edge!;
  const name = f.library!;
  const bad = edge.errorPath!;
  const reason = edge.error!.startsWith(`${bad}: `) ? edge.error!.slice(bad.length + 2) : edge.error!;
  const what = describeBadFile(p.ctx.view.hostPath(bad) ?? bad, reason);
  const itself = edge === p.mainStop;
  problem.summary = itself ? `the loader cannot map ${bad}: "${reason}": it is ${what}`
    : `${who} needs ${dependencyName(edge, name)}, and the loader stops at ${bad} with "${reason}": it is ${what}`;
  problem.chosen = edge.rule ? `${bad} (${edge.rule})` : bad;
  // The file a search without it would load, if any.
  const next = candidateAfter(p, edge, name, bad);
  if (next) problem.shadowed = `${next.path} (${next.rule}), which the loader never reaches`;
  problem.explanation = (itself ? `ld.so maps ${bad} itself, which is ${what}: it fails with "${edge.error}", so every program that loads it does.`
    : `${f.object.path} needs ${name}. The loader finds ${bad}${edge.rule ? ` by ${edge.rule}` : ''}, which is ${what}: ` +
    `it fails there with "${edge.error}" instead of loading ${name}, without looking further.`) +
    (next ? ` ${next.path} (${next.rule}) would be loaded without it.` : '');
  let replace = `remove or replace ${bad} (it is ${what}; if a package installed it, reinstall that package)`;
  if (reason === MISALIGNED) {
    const pageSize = p.platform.pageSize;
    problem.explanation += ` ${p.ctx.pageSizeGiven ? `The kernel's pages are ${pageSize} bytes (--page-size)` : `This machine's pages are ${pageSize} bytes`}: each PT_LOAD segment's file offset and address must differ by a multiple of that, ` +
      'and segments must not share a page across a gap. A library built for smaller pages (-z max-page-size) does not load here, nor one that strip rewrote after patchelf had moved its segments (manylinux wheels).';
    replace = `rebuild ${basename(bad)} with -Wl,-z,max-page-size=${pageSize} (or larger), or reinstall the package it came from: if its files were stripped after patchelf, install them unstripped`;
  }
  const entry = edge.ldEntry;
  if (entry !== undefined && next) problem.fix = `${dropEntryFix(entry, ctx)}, or ${replace}`;
  // A stop leaves the edge without a `via`: the rule says the cache brought the file.
  else if (edge.via === 'ld.so.cache' || edge.rule === p.ctx.cacheLabel) problem.fix = `${cacheEntryFix(bad, p.platform.sysroot)}${next ? `, so that ${next.path} is found` : ''}, or ${replace}`;
  else problem.fix = replace;
  return problem;
}

/**
 * The ld.so.conf files that list `dir` (a host path; under a sysroot, the image's files): the files
 * to change when the cache brings a wrong library. Named by host paths, as every fix names files.
 */
function confFilesListing(dir: string, sysroot: string): string[] {
  const files = [`${sysroot}/etc/ld.so.conf`];
  try {
    files.push(...readdirSync(`${sysroot}/etc/ld.so.conf.d`).filter((n) => n.endsWith('.conf')).sort().map((n) => `${sysroot}/etc/ld.so.conf.d/${n}`));
  } catch {
    // no such directory
  }
  const listed = imageDir(dir, sysroot);
  return files.filter((f) => {
    try {
      return existsSync(f) && readFileSync(f, 'utf8').split('\n').some((l) => l.replace(/#.*/, '').trim().replace(/\/+$/, '') === listed);
    } catch {
      return false;
    }
  });
}

/** A directory as the image's configuration names it (the host path less the sysroot). */
function imageDir(dir: string, sysroot: string): string {
  const host = dir.replace(/\/+$/, '');
  return sysroot !== '' && host.startsWith(`${sysroot}/`) ? host.slice(sysroot.length) : host;
}

/**
 * The change that stops ld.so.cache from bringing `path`: its directory out of the ld.so.conf file
 * that lists it (named: that file is the one thing to edit), then ldconfig. Shared with the
 * run-time loads (runtime-problems.ts).
 */
export function cacheEntryFix(path: string, sysroot: string): string {
  const dir = imageDir(dirname(path), sysroot);
  const files = confFilesListing(dirname(path), sysroot);
  return files.length > 0
    ? `remove ${dir} from ${files.join(' and ')} and run \`sudo ldconfig${sysroot ? ` -r ${sysroot}` : ''}\``
    : `remove ${dir} from the loader's configuration (${sysroot}/etc/ld.so.conf and ${sysroot}/etc/ld.so.conf.d/) and run \`sudo ldconfig${sysroot ? ` -r ${sysroot}` : ''}\``;
}

/** Why no toolkit helps with libcuda.so.1: one wording for a DT_NEEDED entry and for libcudart's dlopen (runtime-problems.ts). */
export const DRIVER_ONLY = 'libcuda.so.1 is the NVIDIA driver\'s own library: it comes only with the driver (Debian\'s libcuda1, ' +
  'the nvidia-driver packages, NVIDIA\'s .run installer; in a container, the NVIDIA Container Toolkit mounts the host\'s), ' +
  'never with a CUDA toolkit, a cudaenv version or a pip wheel (the toolkit\'s stubs/libcuda.so only links programs: ' +
  'loaded in its place, every CUDA call fails with "CUDA driver is a stub library").';

/**
 * A DT_NEEDED libcuda.so.1 nothing provides: the driver is missing, or its user-space part is not
 * where the loader looks. PyTorch's libcaffe2_nvrtc.so (NVRTC's shim) needs it, and torch does not
 * load that at import (checked on Debian's torch 2.6: not mapped after `import torch`).
 */
function explainDriverNotFound(problem: Problem, p: LoaderProcess, f: Finding): void {
  const kernel = kernelDriverVersion(p.platform.sysroot);
  const module = nvidiaModuleLoaded(p.platform.sysroot);
  problem.explanation += ` ${DRIVER_ONLY}` + (module
    ? ` The NVIDIA kernel module ${kernel ?? '(/sys/module/nvidia)'} is loaded, but its libcuda.so.1 is in none of those directories.`
    : ' No NVIDIA kernel module is loaded here (no /proc/driver/nvidia/version, no /sys/module/nvidia): this machine has no driver, ' +
      `so ${basename(f.object.path)} cannot load here whatever the search; it is a warning, failing only with --strict.`);
  if (!module) {
    // No libcuda could work on this machine: CUDA is what is lost here, not a library to fix (as for a dlopen of it, runtime/).
    problem.impact = 'feature';
    problem.feature = NO_DRIVER_FEATURE;
  }
  if (/^libcaffe2_nvrtc\.so/.test(basename(f.object.path))) {
    problem.explanation += ` PyTorch does not load ${basename(f.object.path)} when it is imported (no library torch starts with needs it; ` +
      'it is the shim of NVRTC, run-time compilation): `import torch` works without the driver, torch.cuda.is_available() is False, ' +
      'and whatever loads this library fails.';
  }
  problem.fix = module && kernel
    ? `install the driver's user-space libraries of ${kernel} (the libcuda1/nvidia-driver package of that version), or add the directory that holds libcuda.so.${kernel} to /etc/ld.so.conf.d/ and run \`ldconfig\``
    : module ? 'install the user-space libraries of the driver this machine runs (`modinfo nvidia` names its version), or add the directory that holds its libcuda.so.1 to /etc/ld.so.conf.d/ and run `ldconfig`'
      : 'install the NVIDIA driver (on a machine with an NVIDIA GPU: `nvidia-smi` then works), or run this in a container with the NVIDIA Container Toolkit (`docker run --gpus all`); on a build host without a GPU, nothing needs fixing';
}

/**
 * What follows from a libcuda.so.1 missing on a machine without an NVIDIA kernel module (the
 * symbols and versions an object would have had from it) is what that problem is: a warning.
 */
export function markNoDriverConsequences(problems: Problem[]): void {
  const missing = new Set(problems.filter((q) => q.kind === 'not-found' && q.library === 'libcuda.so.1' && q.feature === NO_DRIVER_FEATURE).map((q) => q.object));
  if (missing.size === 0) return;
  for (const q of problems) {
    if (q.library === 'libcuda.so.1' && missing.has(q.object) && (q.kind === 'undefined-symbol' || q.kind === 'version-not-found')) {
      q.impact = 'feature';
      q.feature = NO_DRIVER_FEATURE;
    }
  }
}

function explainNotFound(problem: Problem, p: LoaderProcess, f: Finding, who: string, ctx: ExplainContext): Problem {
  const edge = f.edge!;
  const name = f.library!;
  if (edge.errorPath) return explainStop(problem, p, f, who, ctx);
  if (edge.kind === 'auxiliary') {
    // The one auxiliary failure ld.so does not pass over (see mapDependency in the resolver).
    problem.summary = `${who} names ${name} as DT_AUXILIARY, and its dynamic string tokens expand to nothing`;
    problem.explanation = `${f.object.path} has DT_AUXILIARY ${name}. A DT_AUXILIARY object that cannot be loaded is skipped, but one whose tokens expand to nothing stops the load with "empty dynamic string token substitution" (elf/dl-deps.c).`;
    problem.fix = `relink ${basename(f.object.path)} with a DT_AUXILIARY name (-Wl,-f,NAME) the loader can expand`;
    return problem;
  }
  problem.summary = `${who} needs ${dependencyName(edge, name)}, which the loader cannot find`;
  const wrongClass = edge.passedOver.filter((c) => c.status !== 'ok');
  if (edge.error) {
    problem.explanation = `${f.object.path} needs ${name}, and every candidate is built for another ELF class or machine (the loader says "${edge.error}").`;
  } else {
    problem.explanation = `${f.object.path} needs ${name}, and no directory on its search path holds it: its DT_RPATH/DT_RUNPATH, LD_LIBRARY_PATH, ld.so.cache and the system directories.`;
  }
  if (wrongClass.length > 0) {
    problem.explanation += ` Passed over: ${wrongClass.map((c) => `${c.path} (${c.reason})`).join(', ')}.`;
  }
  const cuda = cudaMajorOf(name);
  const cudnn = /^libcudnn\w*\.so\.(\d+)/.exec(name)?.[1];
  const stored = storeVersionsWith(name, ctx.storeVersionsDir);
  if (name === 'libcuda.so.1' && !edge.error) {
    explainDriverNotFound(problem, p, f);
  } else if (stored.length > 0) {
    // Already on this machine: switching to it is the whole fix.
    problem.fix = `CUDA ${stored.join(', ')} in the cudaenv store ${stored.length === 1 ? 'has' : 'have'} ${name}: \`cudaenv use ${stored[0]} --ld-library-path prepend\` puts its libraries on LD_LIBRARY_PATH`;
  } else if (cuda) {
    const [major, other] = cuda.majors;
    problem.fix = other === undefined
      ? `${name} belongs to CUDA ${major}: \`cudaenv install ${major}\` then \`cudaenv use ${major}\`, or \`pip install ${pipWheel(cuda.component, major)}\` in a Python environment`
      : `${name} belongs to CUDA ${major} and ${other}: \`cudaenv install ${major}\` then \`cudaenv use ${major}\` (or ${other}), or in a Python environment \`pip install ${pipWheel(cuda.component, major)}\` (CUDA ${other}: \`pip install ${pipWheel(cuda.component, other)}\`)`;
  } else if (cudnn) {
    // cuDNN's soname carries its own major, not CUDA's; its wheels stay suffixed by the CUDA major, 13 included.
    problem.fix = `${name} is cuDNN ${cudnn}: \`cudaenv install VERSION --cudnn ${cudnn}\` for the CUDA version you use, or \`pip install 'nvidia-cudnn-cu12==${cudnn}.*'\` in a Python environment (nvidia-cudnn-cu13 for CUDA 13, cu11 for CUDA 11)`;
  } else {
    problem.fix = `install the package that provides ${name}, or add the directory that holds it to LD_LIBRARY_PATH`;
  }
  // A library next to the one that needs it is the usual case of a directory of private libraries:
  // the loader never looks in an object's own directory unless its RUNPATH/RPATH says $ORIGIN.
  const ownDir = dirname(f.object.path);
  if (!name.includes('/') && !edge.error && existsSync(join(ownDir, name))) {
    problem.explanation += ` ${join(ownDir, name)} is next to it, but the loader does not search an object's own directory unless its DT_RUNPATH or DT_RPATH says $ORIGIN.`;
    const current = splitLdLibraryPath(ctx.ldLibraryPath);
    problem.fix = `add ${ownDir} to LD_LIBRARY_PATH (\`export LD_LIBRARY_PATH=${quoteSh([ownDir, ...current].join(':'))}\`), or relink ${basename(f.object.path)} with -Wl,-rpath,'$ORIGIN'`;
  }
  return problem;
}
