import type {GpuFacts} from './gpu.js';
import type {CondaFacts} from './conda.js';
import type {DriverFacts} from './compat.js';
import type {LdEntryFact, PointerFact} from './env-vars.js';
import type {LoaderFacts} from './loader-view.js';
import type {TorchFact} from './pytorch.js';
import type {SelectionFact} from './toolkit.js';
import type {Finding, Severity} from './types.js';

export interface DoctorFacts {
  /** With the libcuda.so.1 programs here load (the loader's pick in this environment), and whether it is the toolkit's stub. */
  driver: DriverFacts & {loadedLibrary: {path: string; rule: string; stub: boolean} | null};
  cudaenv: SelectionFact;
  activeToolkit: {source: string; path: string; version: string | null} | null;
  pointers: PointerFact[];
  /** Per CUDA entry: dependencies of the wheels it redirects (shadows), breaks, or alone provides (supplies); null when not examined. */
  ldLibraryPath: Array<LdEntryFact & {shadows: number | null; breaks: number | null; supplies: number | null}>;
  python: {
    interpreter: string | null;
    /** The program the pip CUDA libraries were checked as dlopened by (`check --exe`); null: checked as `ldd` loads them. */
    program: string | null;
    sitePackages: string[];
    cudaLibraryDirs: string[];
    torch: TorchFact | null;
  };
  loader: LoaderFacts;
  conda: CondaFacts;
  /** The machine's GPUs (nvidia-smi) and the GPU code of the Python environment's CUDA libraries (issue 33). */
  gpu: GpuFacts;
  /** Set when a test root stands in for the machine (CUDAENV_SYSROOT). */
  sysroot: string | null;
  /** Under CUDAENV_SYSROOT: the facts taken from this host, not the image. */
  hostFacts: string[];
  /** Every problem the checks of this environment's libraries found (as `cudaenv check` finds it), with its severity there and the finding that reports it. */
  libraryProblems: Array<{kind: string; object: string; library: string | null; version: string | null; symbol: string | null; severity: Severity; finding: string}>;
}

export interface DoctorReport {
  findings: Finding[];
  facts: DoctorFacts;
}

const SECTIONS: Array<[prefix: string, title: string]> = [
  ['driver', 'Driver'], ['gpu', 'GPU'], ['toolkit', 'Toolkit'], ['env', 'Environment'], ['pytorch', 'PyTorch'], ['loader', 'Loader'], ['conda', 'Conda'],
];

const RANK: Record<Severity, number> = {error: 0, warning: 1, info: 2};

export function hasErrors(report: DoctorReport): boolean {
  return report.findings.some((f) => f.severity === 'error');
}

/** Findings in section order, errors first within a section (stable otherwise). */
export function sortFindings(findings: Finding[]): Finding[] {
  const section = (f: Finding): number => {
    const i = SECTIONS.findIndex(([p]) => f.id.startsWith(`${p}.`));
    return i < 0 ? SECTIONS.length : i;
  };
  return findings.map((f, i) => ({f, i})).sort((a, b) => section(a.f) - section(b.f) || RANK[a.f.severity] - RANK[b.f.severity] || a.i - b.i).map((x) => x.f);
}

function driverLine(d: DoctorFacts['driver']): string {
  if (!d.version) return 'none found';
  if (d.kernelModuleLoaded === false) return `user-space ${d.version} only (${d.source}); no NVIDIA kernel module loaded`;
  const mod = d.kernelModule ? `, ${d.kernelModule} kernel module` : '';
  const mvc = d.newestMajorViaMinorVersionCompatibility ? `, CUDA ${d.newestMajorViaMinorVersionCompatibility}.x via minor-version compatibility` : '';
  const beyond = d.newerThanDriverTable ? ` (the newest in cudaenv's driver table; maybe newer ones too)` : '';
  return `${d.version} (${d.source}${mod}); runs CUDA <= ${d.newestFullySupported ?? '?'}${beyond} fully${mvc}`;
}

function factLine(prefix: string, facts: DoctorFacts): string {
  switch (prefix) {
    case 'driver': {
      const lib = facts.driver.loadedLibrary;
      const loads = lib ? `; programs here load ${lib.path}${lib.stub ? ' (the CUDA toolkit\'s stub: every CUDA call fails)' : ''}` : '';
      return `${driverLine(facts.driver)}${loads}`;
    }
    case 'toolkit': {
      const t = facts.activeToolkit;
      const sel = facts.cudaenv;
      const via = sel.label ? `cudaenv ${sel.label}, ${sel.origin}` : sel.system ? `cudaenv: system (${sel.origin})` : `cudaenv: ${sel.spec ?? '?'} (${sel.origin})`;
      return t ? `${t.version ? `CUDA ${t.version}` : 'version unknown'} at ${t.path} [${t.source === 'cudaenv' ? via : `${t.source}; ${via}`}]` : `none [${via}]`;
    }
    case 'env': {
      // A distribution's torch (Debian's) loads system packages' CUDA libraries, not pip's wheels.
      const libs = facts.python.torch?.libraries === 'system' ? 'torch\'s CUDA libraries' : 'the pip wheels';
      const entries = facts.ldLibraryPath.map((e) => {
        const effect = e.breaks ? `breaks ${libs}` : e.shadows ? `shadows ${libs}` : e.shadows === 0 && !e.supplies ? `no effect on ${libs}` : null;
        const notes = [e.toolkitVersion ? `CUDA ${e.toolkitVersion}` : null, effect, e.supplies ? `provides libraries ${libs === 'the pip wheels' ? 'the pip wheels need' : 'torch needs'}` : null].filter(Boolean);
        return notes.length > 0 ? `${e.entry} (${notes.join('; ')})` : e.entry;
      });
      return entries.length > 0 ? `LD_LIBRARY_PATH has CUDA libraries in ${entries.join(', ')}` : 'no CUDA libraries on LD_LIBRARY_PATH';
    }
    case 'pytorch': {
      const p = facts.python;
      if (!p.interpreter && p.sitePackages.length === 0) return 'no Python found';
      const torch = p.torch ? `torch ${p.torch.version ?? '?'} (${p.torch.cuda ? `CUDA ${p.torch.cuda}` : p.torch.hip ? `ROCm ${p.torch.hip}` : 'CPU-only'})` : 'no torch';
      const dirs = p.torch?.libraries === 'system' ? 'CUDA library dir(s) of a distribution\'s build (its CUDA libraries are system packages)' : 'pip CUDA library dir(s)';
      return `${p.interpreter ?? 'python'}: ${torch}, ${p.cudaLibraryDirs.length} ${dirs}${p.program ? ` (checked as ${p.program} loads them)` : ''}`;
    }
    case 'loader': {
      const l = facts.loader;
      const cache = l.cudaCacheEntries === null ? `${l.cacheFile} not read` : `${l.cudaCacheEntries} CUDA entries in ${l.cacheFile}`;
      const unique = l.confDirs.filter((c) => !c.sameAs).length;
      const twice = l.confDirs.length - unique;
      return `${cache}; ${unique} ld.so.conf dir(s)${twice > 0 ? ` (${twice} more named twice, by another path)` : ''}`;
    }
    case 'gpu': {
      const g = facts.gpu;
      if (g.gpus.length === 0) return g.reason ? `none listed (${g.reason})` : 'none listed';
      const covered = g.libraries.length > 0 ? `; ${g.libraries.length} Python CUDA librar${g.libraries.length === 1 ? 'y carries' : 'ies carry'} GPU code` : '';
      return `${g.gpus.map((x) => `${x.name} (${x.source.replace(/^nvidia-smi: /, '')})`).join(', ')}${covered}`;
    }
    case 'conda':
      return facts.conda.prefix ? `${facts.conda.prefix}: ${facts.conda.hooks.length > 0 ? 'cudaenv hook' : 'no cudaenv hook'}` : 'no active environment';
    default:
      return '';
  }
}

const MARK: Record<Severity, string> = {error: 'error', warning: 'warn ', info: 'info '};

/** One screen: a fact line per section, then its findings, each problem with its fix. */
export function renderReport(report: DoctorReport): string {
  const lines: string[] = [];
  const sorted = sortFindings(report.findings);
  if (report.facts.sysroot) lines.push(`${'Sysroot'.padEnd(12)}${report.facts.sysroot}: system files read in this image; from this host: ${report.facts.hostFacts.join('; ')}`);
  for (const [prefix, title] of SECTIONS) {
    // No GPU listed and nothing to say: a build machine or a container; the Driver line says why.
    if (prefix === 'gpu' && (report.facts.gpu?.gpus.length ?? 0) === 0 && !sorted.some((f) => f.id.startsWith('gpu.'))) continue;
    lines.push(`${title.padEnd(12)}${factLine(prefix, report.facts)}`);
    for (const f of sorted.filter((x) => x.id.startsWith(`${prefix}.`))) {
      lines.push(`  ${MARK[f.severity]} ${f.title}`);
      const shown = f.severity === 'info' ? f.evidence.slice(0, 3) : f.evidence.slice(0, 8);
      for (const e of shown) lines.push(`          ${e}`);
      if (f.evidence.length > shown.length) lines.push(`          ... (${f.evidence.length - shown.length} more lines in --json)`);
      if (f.fix) lines.push(`          fix: ${f.fix}`);
    }
  }
  const errors = report.findings.filter((f) => f.severity === 'error').length;
  const warnings = report.findings.filter((f) => f.severity === 'warning').length;
  lines.push('', errors + warnings === 0 ? 'No problems found.' : `${errors} error(s), ${warnings} warning(s).`);
  return `${lines.join('\n')}\n`;
}
