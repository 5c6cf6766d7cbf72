/**
 * `check --gpu` (issue 33): after the loader model, whether the GPUs asked for run each library's
 * kernels. The device code of every object of the report comes from the device-code cache (one
 * read per file identity), the rules from ./coverage.ts; explain/format-gpu.ts words it.
 */
import type {CheckReport, GpuReport, GpuTarget} from '../report-types.js';
import {DeviceCodeCache} from '../cache/device-code-cache.js';
import {gpuReport, summaryArchitectures} from './coverage.js';
import {distinctGpus, machineDriver, machineGpus, parseGpu} from './gpu-targets.js';

/** `--gpu` values: compute capabilities or architectures; `auto` (or `machine`): this machine's GPUs. */
export function resolveGpus(values: string[], warnings: string[]): {gpus: GpuTarget[]; driver: string | null} {
  const gpus: GpuTarget[] = [];
  let machine = false;
  for (const v of values) {
    if (v === 'auto' || v === 'machine') machine = true;
    else gpus.push(parseGpu(v));
  }
  if (machine) {
    const found = machineGpus();
    if (found.reason) warnings.push(`--gpu auto: ${found.reason}`);
    gpus.push(...found.gpus);
  }
  // The machine's driver JIT-compiles PTX only for the machine's GPUs; for a named one it is another machine's.
  return {gpus: distinctGpus(gpus), driver: machine ? machineDriver() : null};
}

/** Sets `report.gpu` (and `report.ok` false when a library runs on none of its code on some GPU). */
export function checkGpuCode(report: CheckReport, values: string[], cacheDir: string | undefined, warnings: string[]): void {
  const {gpus, driver} = resolveGpus(values, warnings);
  const cache = new DeviceCodeCache(cacheDir);
  const libraries = report.objects.flatMap((o) => {
    const code = cache.get(o.path);
    return code && (code.modules.length > 0 || code.problem) ? [{path: o.path, code}] : [];
  });
  cache.save();
  report.gpu = gpuReport(libraries, gpus, driver);
  if (report.ok) loaderPassed.add(report);
  if (!report.gpu.ok) report.ok = false;
}

/** Reports whose loader part passed before the GPU part was added. */
const loaderPassed = new WeakSet<CheckReport>();

/** The summary line when the loader part passes and the GPU part fails; undefined otherwise. */
export function gpuSummaryLine(report: CheckReport): string | undefined {
  const first = report.gpu?.problems[0];
  if (!first || !loaderPassed.has(report)) return undefined;
  return `${first.summary}; ${first.fix}`;
}

/** For `--tree`: each object's architectures, read through the device-code cache. */
export function gpuCodeForTree(report: CheckReport, cacheDir: string | undefined): (path: string) => string | undefined {
  const cache = new DeviceCodeCache(cacheDir);
  const text = new Map<string, string | undefined>();
  for (const o of report.objects) {
    const code = cache.get(o.path);
    const {sass, ptx} = code ? summaryArchitectures(code) : {sass: [], ptx: []};
    text.set(o.path, sass.length + ptx.length > 0 ? [...sass, ...ptx.map((p) => p.replace(/@.*/, ''))].join(' ') : undefined);
  }
  cache.save();
  return (path) => text.get(path);
}

/**
 * The coverage of these files on these GPUs, for callers outside the check (doctor): each file's
 * device code through the device-code cache (`cacheDir`: $CUDAENV_DIR/cache/check; undefined: none).
 */
export function gpuCoverage(paths: string[], gpus: GpuTarget[], driver: string | null, cacheDir?: string): GpuReport {
  const cache = new DeviceCodeCache(cacheDir);
  const libraries = paths.flatMap((path) => {
    const code = cache.get(path);
    return code && (code.modules.length > 0 || code.problem) ? [{path, code}] : [];
  });
  cache.save();
  return gpuReport(libraries, gpus, driver);
}
