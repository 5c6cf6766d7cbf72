import {readdirSync} from 'node:fs';
import {join} from 'node:path';
import {loaderVariables, type CheckOptions, type CheckReport, type Problem} from '../elf/index.js';
import type {ActiveToolkit} from './toolkit.js';
import type {DoctorContext, Finding} from './types.js';

type CheckFn = (options: CheckOptions) => Promise<CheckReport>;

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

/**
 * Which libcuda.so.1 a CUDA program here would get at its first CUDA call, as the loader model
 * follows libcudart's dlopen with this environment (LD_LIBRARY_PATH, ld.so.conf, RPATHs): the
 * toolkit's stub, a libcuda of another release than the kernel module, or one too old for the
 * toolkit are errors, however healthy the driver itself looks.
 */
export async function driverLibraryFindings(ctx: DoctorContext, active: ActiveToolkit | undefined, pyLibDirs: string[], check: CheckFn, program: string | null): Promise<Finding[]> {
  const targets = cudartFiles(active, pyLibDirs);
  if (targets.length === 0) return [];
  const report = await check({targets, ldLibraryPath: ctx.env.LD_LIBRARY_PATH, storeVersionsDir: ctx.paths.versions, cwd: ctx.cwd,
    ...(program ? {exe: program} : {}), ...loaderVariables(ctx.env)});
  const findings: Finding[] = [];
  const seen = new Set<string>();
  for (const p of report.problems) {
    const id = ID[p.kind];
    if (!id || p.edge !== 'dlopen' || seen.has(`${id}\0${p.chosen}`)) continue;
    seen.add(`${id}\0${p.chosen}`);
    findings.push({id, severity: 'error', title: p.summary, evidence: [...(p.chosen ? [`loader picks: ${p.chosen}`] : []), p.explanation], fix: p.fix});
  }
  return findings;
}
