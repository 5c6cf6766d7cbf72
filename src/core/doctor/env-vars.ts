import {accessSync, constants, readdirSync, statSync, type Stats} from 'node:fs';
import {basename, dirname} from 'node:path';
import {quoteSh} from '../text/quote.js';
// LD_LIBRARY_PATH as ld.so splits it: ':' and ';'.
import {splitLdLibraryPath} from '../elf/api.js';
import {cudaLibrariesIn} from './cuda-libs.js';
import {describeToolkit, describeToolkitDir, type ToolkitDir, type ToolkitState} from './toolkit.js';
import type {DoctorContext, Finding} from './types.js';

export interface PointerFact {
  /** CUDA_HOME, CUDA_PATH, nvcc, /usr/local/cuda, cudaenv. */
  name: string;
  value: string | null;
  /** The toolkit directory it names, links resolved; null when it names nothing that exists. */
  toolkit: string | null;
  version: string | null;
}

export interface LdEntryFact {
  entry: string;
  /** 0-based position in LD_LIBRARY_PATH. */
  index: number;
  cudaLibraries: string[];
  /** The toolkit the entry belongs to (its parent, or two up for targets/<arch>/lib), when it is one. */
  toolkit: string | null;
  toolkitVersion: string | null;
}

const POINTER_IDS: Record<string, string> = {CUDA_HOME: 'cuda-home', CUDA_PATH: 'cuda-path', nvcc: 'nvcc', '/usr/local/cuda': 'usr-local-cuda'};

/**
 * CUDA_HOME, CUDA_PATH, `which nvcc`, /usr/local/cuda and the active cudaenv version:
 * each pointer that names a different toolkit than the active one is flagged.
 */
export function pointerFindings(ctx: DoctorContext, state: ToolkitState): {pointers: PointerFact[]; findings: Finding[]} {
  const findings: Finding[] = [];
  const entries: Array<{name: string; value: string; t: ToolkitDir}> = [];
  if (state.selection.path) entries.push({name: 'cudaenv', value: state.selection.label ?? state.selection.path, t: describeToolkitDir(ctx, state.selection.path)});
  for (const key of ['CUDA_HOME', 'CUDA_PATH'] as const) {
    const value = ctx.env[key];
    if (value) entries.push({name: key, value, t: describeToolkitDir(ctx, value)});
  }
  if (state.nvcc) entries.push({name: 'nvcc', value: state.nvcc.path + (state.nvcc.shim ? ' (cudaenv shim)' : ''), t: state.nvcc.toolkit});
  if (state.usrLocalCuda.exists) entries.push({name: '/usr/local/cuda', value: '/usr/local/cuda', t: state.usrLocalCuda});

  const pointers = entries.map((e) => ({name: e.name, value: e.value, toolkit: e.t.real ?? null, version: e.t.version ?? null}));
  const active = state.active;
  const label = state.selection.label;
  for (const e of entries) {
    if (e.name === 'cudaenv') continue;
    const id = POINTER_IDS[e.name]!;
    if (!e.t.real) {
      findings.push({
        id: `env.${id}-missing`,
        severity: 'warning',
        title: `${e.name} names a directory that does not exist`,
        evidence: [`${e.name}=${e.value}`],
        fix: label ? `cudaenv use ${label}` : `unset ${e.name}, or point it at an existing toolkit`,
      });
      continue;
    }
    if (!active?.real || e.t.real === active.real) continue;
    if (active.source === 'nvcc on PATH' && e.name === 'nvcc') continue;
    const fix = e.name === '/usr/local/cuda'
      ? (label ? `sudo cudaenv link ${label} (build systems and IDEs that read /usr/local/cuda then agree)`
        : `cudaenv add ${quoteSh(active.real)}, then sudo cudaenv link ${active.version ?? 'VERSION'}`)
      : label ? `cudaenv use ${label} (sets PATH, CUDA_HOME and CUDA_PATH together)`
        : e.name === 'nvcc' ? `put ${active.real}/bin first on PATH` : `export ${e.name}=${quoteSh(active.real)}`;
    findings.push({
      id: `env.${id}-differs`,
      severity: 'warning',
      title: `${e.name} points at a different toolkit than the active one`,
      evidence: [`${e.name}: ${describeToolkit(e.t)}`, `active (${active.source}${label ? ` ${state.selection.origin}` : ''}): ${describeToolkit(active)}`],
      fix,
    });
  }
  return {pointers, findings};
}

/** The toolkit a library directory belongs to: lib64/lib's parent, or targets/<arch>/lib's toolkit. */
function toolkitOfLibDir(ctx: DoctorContext, entry: string): ToolkitDir | undefined {
  const candidates = [dirname(entry)];
  if (basename(dirname(dirname(entry))) === 'targets') candidates.push(dirname(dirname(dirname(entry))));
  for (const c of candidates) {
    const t = describeToolkitDir(ctx, c);
    if (t.version) return t;
  }
  return undefined;
}

function dropFix(list: string[], entry: string): string {
  const rest = list.filter((e) => e !== '' && e !== entry).join(':');
  return rest ? `export LD_LIBRARY_PATH=${quoteSh(rest)}` : 'unset LD_LIBRARY_PATH';
}

/**
 * An entry doctor cannot look into: a file, a loop of links, a directory this user may not read.
 * ld.so passes over each without a word (a missing directory too, which is common and not said),
 * so the libraries meant to come from it come from elsewhere or not at all.
 */
function badEntry(entry: string): {what: string; why: string; fix?: string} | undefined {
  let st: Stats;
  try {
    st = statSync(entry);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') return {what: 'is a loop of symbolic links', why: `${entry}: too many levels of symbolic links: the loader skips it`};
    if (code === 'EACCES') return {what: 'cannot be reached: a directory on its way may not be searched by this user', why: `${entry}: permission denied: the loader skips it for this user`};
    if (code === 'ENOTDIR') return {what: 'has a file where a directory should be on its way', why: `${entry}: not a directory: the loader skips it`};
    return undefined;
  }
  if (!st.isDirectory()) return {what: 'is a file, not a directory', why: `${entry}: not a directory: the loader searches directories only, and skips it`};
  try {
    accessSync(entry, constants.X_OK);
  } catch {
    return {what: 'is a directory this user may not search (no x permission)', why: `${entry}: permission denied: the loader finds nothing in it for this user`};
  }
  try {
    readdirSync(entry);
  } catch {
    return {
      what: 'cannot be listed by this user (no read permission): doctor cannot tell which CUDA libraries it holds; the loader still opens files in it by name',
      why: `${entry}: permission denied (readdir)`,
      fix: `Make it readable (chmod a+r ${quoteSh(entry)}) or check its libraries as a user who may read it (cudaenv check ${quoteSh(entry)})`,
    };
  }
  return undefined;
}

/** Every LD_LIBRARY_PATH entry that holds CUDA libraries, and empty entries (the current directory). */
export function ldLibraryPathEntries(ctx: DoctorContext): {entries: LdEntryFact[]; findings: Finding[]} {
  const findings: Finding[] = [];
  const list = splitLdLibraryPath(ctx.env.LD_LIBRARY_PATH);
  const entries: LdEntryFact[] = [];
  list.forEach((entry, index) => {
    if (entry === '') return;
    const bad = badEntry(entry);
    // Nothing in it can be checked: said, never passed over in silence.
    if (bad) {
      findings.push({
        id: 'env.ld-library-path-bad-entry',
        severity: 'warning',
        title: `LD_LIBRARY_PATH entry ${entry} ${bad.what}`,
        evidence: [`LD_LIBRARY_PATH=${ctx.env.LD_LIBRARY_PATH} (entry ${index + 1})`, bad.why],
        fix: bad.fix ?? dropFix(list, entry),
      });
      return;
    }
    const libs = cudaLibrariesIn(entry);
    if (libs.length === 0) return;
    const t = toolkitOfLibDir(ctx, entry);
    entries.push({entry, index, cudaLibraries: libs, toolkit: t?.real ?? null, toolkitVersion: t?.version ?? null});
  });
  if (list.includes('')) {
    const cleaned = list.filter((e) => e !== '').join(':');
    findings.push({
      id: 'env.ld-library-path-empty-entry',
      severity: 'warning',
      title: 'LD_LIBRARY_PATH has an empty entry: the loader then searches the current directory',
      evidence: [`LD_LIBRARY_PATH=${ctx.env.LD_LIBRARY_PATH}`],
      fix: cleaned ? `export LD_LIBRARY_PATH=${quoteSh(cleaned)}` : 'unset LD_LIBRARY_PATH',
    });
  }
  return {entries, findings};
}
