/**
 * `cudaenv doctor`: every fact about a machine's CUDA state and every problem, each with
 * its fix. Reads files only, except one run of the Python interpreter (its sys.path) and,
 * when no driver file says the version, `nvidia-smi`.
 */
import {existsSync} from 'node:fs';
import {firstOnPath, pythonCudaLibDirs} from '../system/python-env.js';
import {inspectPythonCached} from '../system/python-env-cache.js';
import {leftoverStaging, type LeftoverStaging} from '../remote/staging.js';
import {formatBytes} from '../text/bytes.js';
import {dynamicProgram} from '../elf/index.js';
import {cudartReport, driverProblemFindings} from './driver-library.js';
import type {CheckReport} from '../elf/api.js';
import {checkGroup, groupFindings, libraryGroups, severityOf, type Reported} from './libraries.js';
import {loadedLibcuda, stubFinding, type LoadedLibcuda} from './loaded-libcuda.js';
import {driverFacts, driverFindings, findForwardCompat} from './compat.js';
import {condaFindings} from './conda.js';
import {driverMismatchFinding, findLibcuda, noKernelModuleFinding, readDriver} from './driver.js';
import {ldLibraryPathEntries, pointerFindings} from './env-vars.js';
import {loaderView, type CacheEntry} from './loader-view.js';
import {gpuFindings} from './gpu.js';
import {findTorch, torchFindings} from './pytorch.js';
import type {DoctorReport} from './report.js';
import {shadowingFindings, type CheckFn} from './shadowing.js';
import {displayPath, sysPath} from './sysroot.js';
import {inspectToolkits} from './toolkit.js';
import type {DoctorContext, Finding} from './types.js';

export type {DoctorReport, DoctorFacts} from './report.js';
export {hasErrors, renderReport, sortFindings} from './report.js';
export type {DoctorContext, Finding, Severity} from './types.js';

export interface LoaderCache {
  entries: CacheEntry[];
  /** Where the cache sends `libcuda.so.1` for this machine's ELF class and architecture. */
  libcuda?: string;
}

export interface DoctorDeps {
  /** The check engine (src/core/elf checkLibraries). */
  check: CheckFn;
  /** Reads an ld.so.cache file; undefined when it cannot be read. */
  readCache: (file: string) => Promise<LoaderCache | undefined>;
}

/**
 * Under CUDAENV_SYSROOT, what doctor still takes from this host (everything else it reads in the image).
 */
export const HOST_FACTS = [
  'the library checks\' system directories, glibc release, CPU and mounts (the image\'s ld.so.cache is used where the image has one)',
  'LD_LIBRARY_PATH, LD_PRELOAD, the cudaenv store and the paths in them',
  'the Python interpreter (its sys.path) and nvidia-smi, run on this host',
];

/** What an install stopped by SIGKILL or a crash left in the store's tmp/ (issue 44): gigabytes with real toolkits. */
function leftoverFinding(ctx: DoctorContext): Finding | undefined {
  let found: LeftoverStaging[];
  try {
    found = leftoverStaging(ctx.paths);
  } catch {
    return undefined;
  }
  if (found.length === 0) return undefined;
  const total = found.reduce((sum, f) => sum + f.bytes, 0);
  return {
    id: 'toolkit.leftover-staging',
    severity: 'warning',
    title: `${found.length} interrupted install${found.length === 1 ? '' : 's'} left ${formatBytes(total)} in ${ctx.paths.tmp}`,
    evidence: found.map((f) => `${f.path}: CUDA ${f.version}, ${formatBytes(f.bytes)}, by process ${f.pid}, which is gone${f.kind === 'old' ? ' (the previous copy of an install --force: cache clean puts it back)' : ''}`),
    fix: 'cudaenv cache clean (removes what no running install owns; nothing installed is touched)',
  };
}

export async function runDoctor(ctx: DoctorContext, deps: DoctorDeps): Promise<DoctorReport> {
  const findings: Finding[] = [];
  const toolkits = inspectToolkits(ctx);
  findings.push(...toolkits.findings);
  const leftover = leftoverFinding(ctx);
  if (leftover) findings.push(leftover);

  const cacheFile = sysPath(ctx, '/etc/ld.so.cache');
  // Without the file, a cache reader's `ldconfig -p` fallback would describe another root.
  const cache = existsSync(cacheFile) ? await deps.readCache(cacheFile).catch(() => undefined) : undefined;

  const driverFiles = readDriver(ctx, cache?.libcuda);
  const mismatch = driverMismatchFinding(driverFiles, findLibcuda(ctx, cache?.libcuda));
  if (mismatch) findings.push(mismatch);
  const compat = findForwardCompat(ctx, toolkits.active);
  // A libcuda without a kernel module is no working driver: say that, and compare no versions with it.
  const noModule = noKernelModuleFinding(driverFiles);
  const driver = noModule ? undefined : driverFiles;
  if (noModule) findings.push(noModule);
  else findings.push(...driverFindings(ctx, driver, toolkits.active, compat));

  const pointers = pointerFindings(ctx, toolkits);
  findings.push(...pointers.findings);
  const ld = ldLibraryPathEntries(ctx);
  findings.push(...ld.findings);

  const interpreter = ctx.python ?? firstOnPath(['python3', 'python'], ctx.env.PATH) ?? null;
  const py = interpreter ? inspectPythonCached({env: ctx.env, python: interpreter, cwd: ctx.cwd, cacheDir: ctx.paths.checkCache}) : {sitePackages: [], executable: null};
  const sitePackages = py.sitePackages;
  // Python dlopens the wheels' libraries: checked as loaded by the interpreter binary itself (--exe),
  // which sees what ldd cannot (static TLS, a dlopen's executable stack, symbols Python defines).
  // Not a wrapper script no process starts as (then they are checked as `ldd` loads them).
  const program = interpreter ? dynamicProgram(py.executable ?? interpreter) : null;
  const pyLibDirs = pythonCudaLibDirs(sitePackages);
  const torch = findTorch(sitePackages);
  findings.push(...torchFindings(ctx, torch, driver, toolkits.selection.label));
  if (interpreter && sitePackages.length === 0) {
    findings.push({
      id: 'pytorch.no-site-packages',
      severity: 'info',
      title: `${interpreter} reported no site-packages directory and no torch or nvidia package (or could not be run)`,
      evidence: [`${interpreter} -c 'import importlib.util; print(importlib.util.find_spec("torch"))'`],
      fix: 'Pick the environment to examine with --python PATH',
    });
  }

  const verdicts = new Map<string, {shadows: number; breaks: number; supplies: number}>();
  // Every check problem doctor reports, with the finding that reports it (facts.libraryProblems).
  const reported: Reported = new Map();
  const reports: CheckReport[] = [];
  if (pyLibDirs.length > 0) {
    try {
      const shadowing = await shadowingFindings(ctx, ld.entries, pyLibDirs, deps.check, program, torch?.libraries === 'system');
      findings.push(...shadowing.findings);
      for (const [k, v] of shadowing.reported) reported.set(k, v);
      if (shadowing.current) reports.push(shadowing.current);
      for (const v of shadowing.verdicts) verdicts.set(v.entry, {shadows: v.shadows.length, breaks: v.problems.length, supplies: v.supplies.length});
    } catch (error) {
      findings.push({
        id: 'env.check-failed',
        severity: 'warning',
        title: 'The loader check of the Python environment\'s CUDA libraries could not run',
        evidence: [(error as Error).message, ...pyLibDirs],
        fix: 'Run `cudaenv check` on these directories for details',
      });
    }
  }

  // What this environment loads, through check: each LD_LIBRARY_PATH entry's and LD_PRELOAD's
  // CUDA libraries, the active toolkit, /usr/local/cuda (the Python environment's just above).
  for (const group of libraryGroups(ctx, ld.entries, toolkits)) {
    try {
      const checked = await checkGroup(ctx, group, deps.check);
      reports.push(checked.report);
      findings.push(...groupFindings(ctx, [checked], reported));
    } catch (error) {
      findings.push({id: 'env.check-failed', severity: 'warning', title: `The loader check of ${group.label} could not run`,
        evidence: [(error as Error).message, ...group.targets], fix: `Run \`cudaenv check ${group.targets.join(' ')}\` for details`});
    }
  }
  try {
    const cudart = await cudartReport(ctx, toolkits.active, pyLibDirs, deps.check, program);
    if (cudart) {
      reports.unshift(cudart);
      // What only this check found (nothing, where the groups above hold these files): said in check's words all the same.
      findings.push(...groupFindings(ctx, [{group: {id: 'toolkit.libraries-broken', label: 'libcudart as a CUDA program here loads it', targets: cudart.checked}, report: cudart, refused: []}], reported));
    }
  } catch {
    // the same libraries' checks above report an engine that cannot run
  }
  const driverLib = driverProblemFindings(reports, reported);
  findings.push(...driverLib);
  // The libcuda.so.1 programs here load, by whatever route: named a stub even where no libcudart here dlopens it.
  let loaded: LoadedLibcuda | undefined;
  try {
    loaded = await loadedLibcuda(ctx, reports, cache?.libcuda, deps.check);
  } catch {
    loaded = undefined;
  }
  if (loaded?.stub && !driverLib.some((f) => f.id === 'driver.stub-library')) findings.push(stubFinding(ctx, loaded));

  const gpu = await gpuFindings(ctx, driver, toolkits.active, pyLibDirs);
  findings.push(...gpu.findings);

  const loader = loaderView(ctx, toolkits, cache?.entries);
  findings.push(...loader.findings);
  const conda = condaFindings(ctx, toolkits);
  findings.push(...conda.findings);

  const active = toolkits.active;
  return {
    findings,
    facts: {
      driver: {...driverFacts(driverFiles, compat), loadedLibrary: loaded ? {path: displayPath(ctx, loaded.path), rule: loaded.rule, stub: loaded.stub} : null},
      cudaenv: toolkits.selection,
      activeToolkit: active ? {source: active.source, path: active.real ?? active.dir, version: active.version ?? null} : null,
      pointers: pointers.pointers,
      ldLibraryPath: ld.entries.map((e) => ({...e, shadows: verdicts.get(e.entry)?.shadows ?? null, breaks: verdicts.get(e.entry)?.breaks ?? null, supplies: verdicts.get(e.entry)?.supplies ?? null})),
      python: {interpreter, program: pyLibDirs.length > 0 ? program : null, sitePackages, cudaLibraryDirs: pyLibDirs, torch: torch ?? null},
      loader: loader.facts,
      conda: conda.facts,
      gpu: gpu.facts,
      sysroot: ctx.sysroot || null,
      hostFacts: ctx.sysroot ? HOST_FACTS : [],
      libraryProblems: [...reported.values()].map(({problem: p, finding}) => ({kind: p.kind, object: p.object, library: p.library, version: p.version, symbol: p.symbol, severity: severityOf(p) ?? 'warning', finding})),
    },
  };
}
