/**
 * `check --gpu` (issue 33): after the loader model, whether the GPUs asked for run each library's
 * kernels. The device code of every object of the report comes from the device-code cache (one
 * read per file identity), the rules from ./coverage.ts; explain/format-gpu.ts words it.
 */
import {existsSync} from 'node:fs';
import {join} from 'node:path';
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
    return code && (code.modules.length > 0 || code.withoutKernels || code.problem) ? [{path: o.path, code}] : [];
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
    return code && (code.modules.length > 0 || code.withoutKernels || code.problem) ? [{path, code}] : [];
  });
  cache.save();
  return gpuReport(libraries, gpus, driver);
}

/**
 * For the one line after a switch: the first library of `report` that carries no code this
 * machine's GPUs run, with its fix; undefined when every library runs, when none carries GPU code,
 * or when the machine lists no GPU (nvidia-smi on `env`'s PATH, asked only when some object of
 * the report carries device code).
 */
export function machineGpuLine(report: CheckReport, cacheDir: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  // No nvidia-smi (a build host, a container without the driver's tools): nothing read, nothing started.
  if (!(env.PATH ?? '').split(':').some((d) => d !== '' && existsSync(join(d, 'nvidia-smi')))) return undefined;
  const cache = new DeviceCodeCache(cacheDir);
  const libraries = report.objects.flatMap((o) => {
    const code = cache.get(o.path);
    return code && code.modules.some((m) => m.images.length > 0) ? [{path: o.path, code}] : [];
  });
  cache.save();
  if (libraries.length === 0) return undefined;
  const {gpus} = machineGpus(env);
  if (gpus.length === 0) return undefined;
  const first = gpuReport(libraries, distinctGpus(gpus), machineDriver()).problems[0];
  return first ? `${first.summary}; ${first.fix}` : undefined;
}
