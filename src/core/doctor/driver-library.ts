import {readdirSync} from 'node:fs';
import {join} from 'node:path';
import type {CheckReport, Problem} from '../elf/api.js';
import {engineOptions, problemKey, severityOf, type CheckFn, type Reported} from './libraries.js';
import type {ActiveToolkit} from './toolkit.js';
import type {DoctorContext, Finding} from './types.js';

/** The libcudart files a CUDA program here would start from: the active toolkit's and the Python environment's. */
function cudartFiles(active: ActiveToolkit | undefined, pyLibDirs: string[]): string[] {
  const dirs = [...(active ? ['lib64', 'lib'].map((d) => join(active.real ?? active.dir, d)) : []), ...pyLibDirs];
  const files: string[] = [];
  for (const dir of dirs) {
    try {
      for (const name of readdirSync(dir)) if (/^libcudart\.so\.\d+$/.test(name)) files.push(join(dir, name));
    } catch {
      // no such directory
    }
  }
  return [...new Set(files)];
}

const ID: Partial<Record<Problem['kind'], string>> = {
  'cuda-stub': 'driver.stub-library',
  'driver-mismatch': 'driver.loaded-library-mismatch',
  'driver-too-old': 'driver.loaded-library-too-old',
};

/** The check of the libcudart files a CUDA program here would start from, in this environment; null when there are none. */
export async function cudartReport(ctx: DoctorContext, active: ActiveToolkit | undefined, pyLibDirs: string[], check: CheckFn, program: string | null): Promise<CheckReport | null> {
  const targets = cudartFiles(active, pyLibDirs);
  if (targets.length === 0) return null;
  return check({...engineOptions(ctx), targets, ...(program ? {exe: program} : {})});
}

/**
 * The driver's own problems in checks' reports: the toolkit's stub (error 34), a libcuda of another
 * release than the kernel module, one too old for the toolkit; once per kind and file, each
 * recorded in `reported` under its finding's id.
 */
export function driverProblemFindings(reports: CheckReport[], reported: Reported = new Map()): Finding[] {
  const findings: Finding[] = [];
  const seen = new Set<string>();
  for (const report of reports) {
    for (const p of report.problems) {
      const id = ID[p.kind];
      if (!id) continue;
      reported.set(problemKey(p), {problem: p, finding: id});
      if (seen.has(`${id}\0${p.chosen}`)) continue;
      seen.add(`${id}\0${p.chosen}`);
      findings.push({id, severity: severityOf(p) ?? 'error', title: p.kind === 'cuda-stub' ? `${p.summary} (error 34, cudaErrorStubLibrary)` : p.summary,
        evidence: [...(p.chosen ? [`loader picks: ${p.chosen}`] : []), p.explanation], fix: p.fix});
    }
  }
  return findings;
}

/**
 * Which libcuda.so.1 a CUDA program here would get at its first CUDA call, as the loader model
 * follows libcudart's dlopen with this environment (LD_LIBRARY_PATH, LD_PRELOAD, ld.so.conf, RPATHs): the
 * toolkit's stub, a libcuda of another release than the kernel module, or one too old for the
 * toolkit are errors, however healthy the driver itself looks.
 */
export async function driverLibraryFindings(ctx: DoctorContext, active: ActiveToolkit | undefined, pyLibDirs: string[], check: CheckFn, program: string | null): Promise<Finding[]> {
  const report = await cudartReport(ctx, active, pyLibDirs, check, program);
  return report ? driverProblemFindings([report]) : [];
}
