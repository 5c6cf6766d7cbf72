import {closeSync, openSync, readFileSync, readSync, statSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {formatError} from '../errors.js';
import {detectToolkitVersion, toolkitEvidence} from '../versions/detect.js';
import {newerThanTable, tableRange} from '../versions/releases.js';
import {unregisteredToolkitFor} from '../selection/resolve.js';
import {describeOrigin, selectVersion} from '../selection/select.js';
import {quoteSh} from '../text/quote.js';
import {knownReleases, releaseWarning, storeLabelOf} from '../toolkits/register.js';
import {firstOnPath} from '../system/python-env.js';
import {sysRealpath} from './sysroot.js';
import type {DoctorContext, Finding} from './types.js';
import {isDir} from '../fs-kind.js';
import {describeVersion, listVersions} from '../store/registry.js';
import {configuredSiteDirs, probeSites, siteTimeoutMs, siteWarning} from '../store/site.js';

/** A directory that holds (or is said to hold) a toolkit, with its identity and version. */
export interface ToolkitDir {
  /** As given (a variable's value, a link). */
  dir: string;
  /** With links resolved: two pointers name the same toolkit when these are equal. Undefined when missing. */
  real?: string;
  /** Release label (version.json) or MAJOR.MINOR (headers); undefined when it cannot be told. */
  version?: string;
  versionSource?: string;
  /** Why the version may be another: the components match several releases, or none. */
  versionNote?: string;
}

/** CUDA_VERSION / CUDART_VERSION from the headers (12040 -> 12.4), for toolkits without version.json. */
function headerVersion(dir: string): string | undefined {
  for (const [file, macro] of [['cuda.h', 'CUDA_VERSION'], ['cuda_runtime_api.h', 'CUDART_VERSION']] as const) {
    let text: string;
    try {
      text = readFileSync(join(dir, 'include', file), 'utf8').slice(0, 200_000);
    } catch {
      continue;
    }
    const m = new RegExp(`^#define\\s+${macro}\\s+(\\d{4,6})\\b`, 'm').exec(text);
    if (m) {
      const n = Number(m[1]);
      return `${Math.floor(n / 1000)}.${Math.floor((n % 1000) / 10)}`;
    }
  }
  return undefined;
}

/**
 * A toolkit directory's version without running anything (doctor starts no nvcc):
 * version.json / version.txt, the libcudart file name, then the headers.
 */
export function describeToolkitDir(ctx: DoctorContext, dir: string, system = false): ToolkitDir {
  const real = system ? sysRealpath(ctx, dir) : realOrUndefined(dir);
  if (!real || !isDir(real)) return {dir};
  // The store's label first: doctor names a toolkit as `ls` and `current` do (an --as included).
  const stored = storeLabelOf(ctx.paths, real);
  if (stored) return {dir, real, version: stored, versionSource: 'cudaenv store'};
  // With the releases a mirror's manifests named before (the store's cache): no network here.
  const releases = knownReleases(ctx.paths);
  const detected = detectToolkitVersion(real, false, releases);
  if (detected.version) {
    const t: ToolkitDir = {dir, real, version: detected.version, versionSource: detected.source === 'components' ? 'components matched to a release' : detected.source};
    const warning = releaseWarning(real, detected.release, {releases});
    if (warning) t.versionNote = warning;
    return t;
  }
  const fromHeader = headerVersion(real);
  return fromHeader ? {dir, real, version: fromHeader, versionSource: 'headers'} : {dir, real};
}

function realOrUndefined(path: string): string | undefined {
  return sysRealpath({sysroot: ''}, path);
}

export interface SelectionFact {
  spec: string | null;
  label: string | null;
  system: boolean;
  origin: string;
  path: string | null;
  installed: boolean;
  error: string | null;
  /** The store the selected version comes from (the user's, or a site store: issue 45). */
  store?: string | null;
}

export interface ActiveToolkit extends ToolkitDir {
  /** What makes it the active one. */
  source: 'cudaenv' | 'nvcc on PATH' | 'CUDA_HOME' | 'CUDA_PATH' | '/usr/local/cuda';
  /** For a cudaenv version: its label. */
  label?: string;
}

export interface ToolkitState {
  selection: SelectionFact;
  /** The toolkit programs would use: cudaenv's version, else nvcc on PATH, CUDA_HOME, CUDA_PATH, /usr/local/cuda. */
  active?: ActiveToolkit;
  /** /usr/local/cuda (under the sysroot). */
  usrLocalCuda: ToolkitDir & {exists: boolean};
  /** nvcc as `which nvcc` finds it, and whether it is a cudaenv shim. */
  nvcc?: {path: string; shim: boolean; toolkit: ToolkitDir};
  findings: Finding[];
}

/** The toolkit root an nvcc belongs to: its bin's parent (as torch.utils.cpp_extension takes it). */
export function nvccToolkitRoot(nvcc: string): string {
  return dirname(dirname(nvcc));
}

/**
 * The absolute `.../bin/nvcc` a small wrapper script hands over to (`exec /usr/local/cuda-13.0/bin/nvcc "$@"`),
 * read as text, never run.
 */
export function nvccWrapperTarget(path: string): string | undefined {
  let text: string;
  try {
    const fd = openSync(path, 'r');
    try {
      const buf = Buffer.alloc(4096);
      text = buf.subarray(0, readSync(fd, buf, 0, 4096, 0)).toString('utf8');
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  if (!text.startsWith('#!')) return undefined;
  const m = /(\/[^\s'"$`;|&]*\/bin\/nvcc)(?=["'\s]|$)/m.exec(text.split('\n').slice(1).join('\n'));
  return m?.[1];
}

/**
 * The toolkit `which nvcc` runs: the parent of the directory of the real file, or, for a
 * wrapper script outside any toolkit (/usr/local/bin/nvcc), the toolkit it hands over to.
 */
export function toolkitOfNvcc(ctx: DoctorContext, nvcc: string): ToolkitDir {
  const real = realOrUndefined(nvcc) ?? nvcc;
  const direct = describeToolkitDir(ctx, nvccToolkitRoot(real));
  // bin/nvcc alone does not make a toolkit: /usr/local/bin/nvcc is often a wrapper.
  if (direct.version || (direct.real && toolkitEvidence(direct.real).some((e) => e !== 'bin/nvcc'))) return direct;
  const target = nvccWrapperTarget(real);
  if (target && target !== real) {
    const wrapped = describeToolkitDir(ctx, nvccToolkitRoot(realOrUndefined(target) ?? target));
    if (wrapped.real) return wrapped;
  }
  return direct;
}

export function inspectToolkits(ctx: DoctorContext): ToolkitState {
  const findings: Finding[] = [];
  const selection = readSelection(ctx, findings);
  const usrLocal = describeToolkitDir(ctx, '/usr/local/cuda', true);
  const usrLocalCuda = {...usrLocal, exists: usrLocal.real !== undefined};

  let nvcc: ToolkitState['nvcc'];
  const nvccPath = firstOnPath(['nvcc'], ctx.env.PATH);
  if (nvccPath) {
    const shim = dirname(nvccPath) === ctx.paths.shims;
    const toolkit = shim && selection.path ? describeToolkitDir(ctx, selection.path) : toolkitOfNvcc(ctx, nvccPath);
    nvcc = {path: nvccPath, shim, toolkit};
  }

  let active: ActiveToolkit | undefined;
  if (selection.label && selection.path) {
    active = {...describeToolkitDir(ctx, selection.path), source: 'cudaenv', label: selection.label};
    if (!active.version) active.version = selection.label;
  } else if (nvcc && !nvcc.shim && nvcc.toolkit.real) {
    active = {...nvcc.toolkit, source: 'nvcc on PATH'};
  } else {
    for (const key of ['CUDA_HOME', 'CUDA_PATH'] as const) {
      const value = ctx.env[key];
      if (!value) continue;
      const t = describeToolkitDir(ctx, value);
      if (t.real) {
        active = {...t, source: key};
        break;
      }
    }
    if (!active && usrLocalCuda.exists) active = {...usrLocal, real: usrLocal.real, source: '/usr/local/cuda'};
  }
  if (active?.versionNote) {
    findings.push({
      id: 'toolkit.release-uncertain',
      severity: 'info',
      title: `The active toolkit's release is uncertain: ${active.versionNote}`,
      evidence: [describeToolkit(active)],
      fix: null,
    });
  }
  if (active?.version && newerThanTable(active.version)) {
    const {oldest, newest} = tableRange();
    findings.push({
      id: 'toolkit.newer-than-release-table',
      severity: 'info',
      title: `CUDA ${active.version} is newer than every release in cudaenv's release table (${oldest} to ${newest}): a toolkit of it without version.json is named from the mirror's manifests, not from the table`,
      evidence: [describeToolkit(active), `release table: ${oldest} to ${newest} (src/core/versions/releases.json, from NVIDIA's manifests)`],
      fix: 'A newer cudaenv carries a newer table; in a clone, `node scripts/gen-release-table.mjs --mirror URL` regenerates it from a mirror\'s manifests',
    });
  }
  if (!active) {
    findings.push({
      id: 'toolkit.none',
      severity: 'info',
      title: 'No CUDA toolkit is active: no cudaenv version, no nvcc on PATH, no CUDA_HOME, no /usr/local/cuda',
      evidence: [`cudaenv: ${selection.origin}`, `PATH: ${ctx.env.PATH ?? '(unset)'}`],
      fix: 'Install one with `cudaenv install 12.4` and select it with `cudaenv use 12.4` (pip wheels alone run PyTorch; a toolkit is needed to compile).',
    });
  }
  findings.push(...siteStoreFindings(ctx));
  return {selection, active, usrLocalCuda, nvcc, findings};
}

/** The site stores beneath the user's (issue 45): which answer, what each gives this user, which do not and why. */
export function siteStoreFindings(ctx: DoctorContext): Finding[] {
  const config = configuredSiteDirs(ctx.paths.root, ctx.env);
  const timeoutMs = siteTimeoutMs(ctx.env);
  const findings: Finding[] = config.warnings.map((w) => ({id: 'store.site-list', severity: 'warning' as const, title: w, evidence: [config.source], fix: null}));
  const versions = listVersions(ctx.paths);
  for (const site of probeSites(config.dirs, timeoutMs)) {
    const problem = siteWarning(site, config.source, ctx.paths.root, timeoutMs);
    if (problem) {
      findings.push({id: 'store.site-unusable', severity: 'warning', title: problem, evidence: [`${config.source}: ${site.root}`], fix: `fix or remount ${site.root}, or remove it from ${config.source}`});
      continue;
    }
    const from = versions.filter((v) => v.site && v.store === site.root).map((v) => v.label);
    findings.push({
      id: 'store.site', severity: 'info',
      title: `Site store ${site.root} (${config.source}): ${from.length > 0 ? `CUDA ${from.join(', ')} reached from it` : 'nothing reached from it (your store has its versions, or it has none)'}`,
      evidence: [`your store: ${ctx.paths.root}`, `site store: ${site.root} (read only; searched after yours)`],
      fix: null,
    });
  }
  return findings;
}

function readSelection(ctx: DoctorContext, findings: Finding[]): SelectionFact {
  try {
    const sel = selectVersion(ctx.paths, {cwd: ctx.cwd, env: ctx.env});
    const origin = describeOrigin(sel.origin);
    const installed = sel.system || sel.label !== undefined;
    if (!installed) {
      const here = unregisteredToolkitFor(sel.spec, ctx.sysroot);
      findings.push({
        id: 'toolkit.not-installed',
        severity: 'error',
        title: `The selected CUDA ${sel.spec.text} is not installed`,
        evidence: [`${sel.spec.text} (${origin})`, ...(here ? [`CUDA ${here.version} is at ${here.dir}, not registered`] : [])],
        fix: here
          ? `cudaenv add ${quoteSh(here.dir)} (it registers the toolkit this machine has), or cudaenv install ${sel.spec.text}`
          : `cudaenv install ${sel.spec.kind === 'alias' ? 'VERSION' : sel.spec.text}, or choose an installed one with \`cudaenv use\` (see \`cudaenv ls\`)`,
      });
    }
    for (const warning of sel.warnings) {
      findings.push({id: 'toolkit.version-file-warning', severity: 'warning', title: warning, evidence: [origin], fix: null});
    }
    return {
      spec: sel.spec.text, label: sel.label ?? null, system: sel.system, origin,
      path: sel.path ?? null, installed, error: null,
      store: sel.label ? (describeVersion(ctx.paths, sel.label)?.store ?? ctx.paths.root) : null,
    };
  } catch (error) {
    const message = formatError(error);
    findings.push({
      id: 'toolkit.selection-invalid',
      severity: 'error',
      title: 'The cudaenv version selection cannot be read',
      evidence: message.split('\n'),
      fix: 'Correct or remove the file or variable named above (CUDAENV_VERSION, .cuda-version, the global default).',
    });
    return {spec: null, label: null, system: false, origin: 'unreadable', path: null, installed: false, error: message};
  }
}

/** For messages: "12.4.1 at /path" or "/path (version unknown)". */
export function describeToolkit(t: ToolkitDir): string {
  const at = t.real && t.real !== t.dir ? `${t.dir} -> ${t.real}` : t.dir;
  return t.version ? `CUDA ${t.version} at ${at}` : `${at} (version unknown)`;
}
