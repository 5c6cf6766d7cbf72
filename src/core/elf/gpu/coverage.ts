import {basename} from 'node:path';
import {CUDA_GPU_FACTS, driverForPtx, ptxForDriver, releasesCompilingFor} from '../../versions/gpu-targets.js';
import {compareDotted} from '../../versions/version.js';
import type {DeviceCodeSummary, GpuLibrary, GpuReport, GpuTarget, GpuVerdict} from '../report-types.js';
import {pytorchIndexesFor, pytorchInstall} from './pytorch-wheels.js';

/**
 * Will a GPU run a library's kernels? (issue 33) The CUDA runtime loads, for each module (fat
 * binary) of the library, the best image the GPU can run, as NVIDIA's CUDA C++ Programming Guide
 * ("Binary Compatibility", "PTX Compatibility", "Feature Availability") defines them:
 * - SASS for sm_XY runs on compute capability X.Z with Z >= Y (same major only); `sm_XYf`
 *   (family-specific) alike within its family, which is the same major; `sm_XYa`
 *   (arch-specific) only on X.Y itself.
 * - Else PTX for compute_XY is JIT-compiled by the driver for any GPU of capability >= X.Y;
 *   `compute_XYf` only within the family (same major, minor >= Y), `compute_XYa` only for X.Y;
 *   and only by a driver that knows its PTX ISA version (else: "the provided PTX was compiled with
 *   an unsupported toolchain").
 * - Else nothing: "no kernel image is available for execution on the device" when one of the
 *   module's kernels is launched.
 */

interface Image {
  kind: 'sass' | 'ptx';
  major: number;
  minor: number;
  variant: string;
  isa: string | null;
  name: string;
}

function parseImage(name: string): Image | null {
  const m = /^(sm|compute)_(\d+)([af]?)(?:@(\d+\.\d+))?$/.exec(name);
  if (!m) return null;
  const n = Number(m[2]);
  return {kind: m[1] === 'sm' ? 'sass' : 'ptx', major: Math.floor(n / 10), minor: n % 10, variant: m[3]!, isa: m[4] ?? null, name};
}

function runsOn(image: Image, major: number, minor: number): boolean {
  if (image.variant === 'a') return image.major === major && image.minor === minor;
  if (image.kind === 'sass' || image.variant === 'f') return image.major === major && image.minor <= minor;
  return image.major < major || (image.major === major && image.minor <= minor);
}

type ModuleVerdict = {runs: 'sass' | 'ptx' | 'none' | 'ptx-too-new'; by: string | null; driverNeeded?: string};

function moduleVerdict(images: string[], gpu: string, driver: string | null): ModuleVerdict {
  const [major, minor] = gpu.split('.').map(Number) as [number, number];
  const parsed = images.map(parseImage).filter((i): i is Image => i !== null);
  const better = (a: Image, b: Image) => (b.major - a.major) || (b.minor - a.minor);
  const sass = parsed.filter((i) => i.kind === 'sass' && runsOn(i, major, minor)).sort(better);
  if (sass.length > 0) return {runs: 'sass', by: sass[0]!.name};
  const ptx = parsed.filter((i) => i.kind === 'ptx' && runsOn(i, major, minor)).sort(better);
  if (ptx.length === 0) return {runs: 'none', by: null};
  const best = ptx[0]!;
  // The JIT compiles for this GPU only in a driver that supports the GPU (R570 for Blackwell's
  // sm_100 and sm_120), and compiles this PTX only in one that knows its ISA: the later of the two.
  const forPtx = best.isa ? driverForPtx(best.isa) : undefined;
  const forGpu = driverForGpu(gpu);
  const needed = forPtx && forGpu ? (compareDotted(forGpu.driver, forPtx.driver) > 0 ? forGpu : forPtx) : forPtx ?? forGpu;
  if (driver !== null && best.isa) {
    const max = ptxForDriver(driver);
    // A driver newer than every row of the table takes any PTX the table knows; PTX newer than the table: unknown, taken as fine.
    if (needed && max && compareDotted(best.isa, max.ptx) > 0 && compareDotted(driver, needed.driver) < 0) {
      return {runs: 'ptx-too-new', by: best.name, driverNeeded: needed.driver};
    }
  }
  return {runs: 'ptx', by: best.name, ...(needed ? {driverNeeded: needed.driver} : {})};
}

/**
 * The oldest driver that supports a GPU at all: the minimum driver of the first release whose nvcc
 * compiles for it (sm_100 and sm_120 came with CUDA 12.8: R570). Undefined for a GPU the table
 * does not list (older than it, or newer).
 */
export function driverForGpu(gpu: string): {driver: string; cuda: string} | undefined {
  const row = CUDA_GPU_FACTS.find((f) => f.sass.includes(gpu));
  return row ? {driver: row.driver, cuda: row.cuda} : undefined;
}

/**
 * Libraries that carry their kernels outside the fat binary the runtime registers, so that what
 * it holds says nothing: cuFFT (one sm_52 image in every 11.x; its kernels are loaded by cuFFT itself).
 */
const NOT_JUDGED: Array<[RegExp, string]> = [
  [/^libcufftw?\.so/, 'cuFFT loads its kernels itself; its one registered module (an sm_52 image) says nothing about the GPUs it supports'],
];

/** The verdict of one library (its summary) on one GPU; null when it carries no device code the runtime loads. */
export function libraryVerdict(path: string, code: DeviceCodeSummary, gpu: string, driver: string | null): GpuVerdict | null {
  const modules = code.modules.filter((m) => m.images.length > 0);
  const total = modules.reduce((n, m) => n + m.count, 0);
  // Said before anything else (its registered module may hold no kernel at all: cuFFT 11.2's has none).
  const skip = NOT_JUDGED.find(([re]) => re.test(basename(path)));
  if (skip && total + (code.withoutKernels ?? 0) > 0) return {gpu, runs: 'not-judged', by: null, modules: total, modulesWithout: 0, note: skip[1]};
  if (total === 0) return null;
  const tally = {sass: 0, ptx: 0, none: 0, 'ptx-too-new': 0};
  const by = new Map<string, number>();
  let driverNeeded: string | undefined;
  // Modules with nothing for this GPU whose kernels could not be read: not judged, with why.
  let unjudged = 0;
  let why: string | undefined;
  for (const m of modules) {
    const v = moduleVerdict(m.images, gpu, driver);
    if (m.notJudged && (v.runs === 'none' || v.runs === 'ptx-too-new')) {
      unjudged += m.count;
      why ??= m.notJudged;
      continue;
    }
    tally[v.runs] += m.count;
    if (v.by) by.set(v.by, (by.get(v.by) ?? 0) + m.count);
    if (v.driverNeeded && (v.runs === 'ptx' || v.runs === 'ptx-too-new') && (!driverNeeded || compareDotted(v.driverNeeded, driverNeeded) > 0)) driverNeeded = v.driverNeeded;
  }
  const without = tally.none + tally['ptx-too-new'];
  const best = [...by].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
  const sm = `sm_${gpu.replace('.', '')}`;
  const of = (n: number) => (total === 1 ? 'its module' : n === total ? `all ${total} modules` : `${n} of ${total} modules`);
  const notRead = unjudged > 0
    ? `${of(unjudged)} ${unjudged === 1 && total === 1 ? 'carries' : 'carry'} no code for ${sm}, and whether ${unjudged === 1 ? 'it holds' : 'they hold'} kernels could not be read: ${why}`
    : '';
  let runs: GpuVerdict['runs'];
  let note: string;
  if (without > 0 && without + unjudged === total) {
    runs = tally['ptx-too-new'] > 0 ? 'ptx-too-new' : 'none';
    note = runs === 'none'
      ? `carries no code for ${sm}: ${describeCode(modules.flatMap((m) => m.images))}`
      : `carries only PTX newer than the driver can compile for ${sm} (${best}; needs a driver >= ${driverNeeded})`;
  } else if (unjudged === total) {
    // Nothing runs and nothing is known to be launched: said, with why, never a failure.
    runs = 'not-judged';
    note = `${notRead} (the library has ${describeCode(modules.flatMap((m) => m.images))})`;
  } else if (without > 0 || unjudged > 0) {
    runs = 'partial';
    note = [
      ...(without > 0 ? [`${of(without)} carry no code for ${sm}: their kernels fail with "no kernel image is available" if launched there (NVIDIA's libraries ship kernels for one architecture this way)`] : []),
      ...(unjudged > 0 ? [notRead] : []),
    ].join('; ');
  } else if (tally.ptx > 0) {
    runs = 'ptx';
    note = `${of(tally.ptx)} ${total === 1 ? 'runs' : 'run'} on ${sm} only as PTX (${best}), JIT-compiled by the driver at first use${driverNeeded ? ` (${driverWords(driverNeeded, gpu, best)})` : ''}: slow to start, and cached in ~/.nv/ComputeCache`;
  } else {
    runs = 'sass';
    note = `runs on ${sm} (${best})`;
  }
  return {gpu, runs, by: best, modules: total, modulesWithout: without, ...(unjudged > 0 ? {modulesNotJudged: unjudged} : {}),
    ...(driverNeeded && (runs === 'ptx' || runs === 'ptx-too-new' || tally.ptx > 0) ? {driverNeeded} : {}), note};
}

/** Why a PTX JIT needs this driver: it supports the GPU (a driver older than the GPU knows no GPU of it), or it knows the PTX's ISA. */
function driverWords(driver: string, gpu: string, best: string | null): string {
  const forGpu = driverForGpu(gpu);
  const sm = `sm_${gpu.replace('.', '')}`;
  const isa = best ? /@(\d+\.\d+)$/.exec(best)?.[1] : undefined;
  return forGpu && forGpu.driver === driver
    ? `a driver that supports ${sm}: ${driver} or newer, R${driver.split('.')[0]}+ (CUDA ${forGpu.cuda}'s)${isa ? `, which also knows PTX ISA ${isa}` : ''}`
    : `driver >= ${driver}, the first that knows PTX ISA ${isa ?? 'of this PTX'}`;
}

/** "sm_50, sm_60, ... sm_90 and PTX compute_90 (ISA 8.4)". */
export function describeCode(images: string[]): string {
  const sass = [...new Set(images.filter((i) => i.startsWith('sm_')))].sort(byArch);
  const ptx = [...new Set(images.filter((i) => i.startsWith('compute_')))].sort(byArch);
  const parts = [sass.length > 0 ? `SASS for ${sass.join(', ')}` : 'no SASS', ptx.length > 0 ? `PTX for ${ptx.map((p) => p.replace('@', ' (PTX ISA ') + ')').join(', ')}` : 'no PTX'];
  return parts.join(' and ');
}

function byArch(a: string, b: string): number {
  const n = (s: string) => Number(/_(\d+)/.exec(s)?.[1] ?? 0);
  return n(a) - n(b) || a.localeCompare(b);
}

/** Every distinct image name of a summary, SASS and PTX apart. */
export function summaryArchitectures(code: DeviceCodeSummary): {sass: string[]; ptx: string[]} {
  const all = code.modules.flatMap((m) => m.images);
  return {
    sass: [...new Set(all.filter((i) => i.startsWith('sm_')))].sort(byArch),
    ptx: [...new Set(all.filter((i) => i.startsWith('compute_')))].sort(byArch),
  };
}

/** The fix for a library that will not run on `gpu`. */
function fixFor(path: string, verdict: GpuVerdict, gpu: string): string {
  const sm = `sm_${gpu.replace('.', '')}`;
  if (verdict.runs === 'ptx-too-new') {
    return `update the NVIDIA driver to ${verdict.driverNeeded} or newer, or use a build of ${basename(path)} with SASS for ${sm}`;
  }
  if (/\/torch\/lib\/|libtorch_cuda|libc10_cuda/.test(path)) {
    const index = pytorchIndexesFor(gpu)[0];
    return index
      ? `install a PyTorch build that carries ${sm}: \`${pytorchInstall(index)}\` (torch ${index.torch}, CUDA ${index.cuda})`
      : `no PyTorch build cudaenv knows carries ${sm}: build PyTorch from source with TORCH_CUDA_ARCH_LIST=${gpu}`;
  }
  const releases = releasesCompilingFor(gpu);
  if (/^lib(cu|nccl|nv|npp)/.test(basename(path)) && releases.length > 0) {
    return `use ${basename(path).replace(/\.so.*/, '')} of CUDA ${releases[0]} or newer (the first release that compiles for ${sm})${
      /libnccl/.test(path) ? ', or an NCCL release built for it' : ''}`;
  }
  return `use a build of ${basename(path)} that includes ${sm}, or rebuild it with \`-gencode arch=compute_${gpu.replace('.', '')},code=${sm}\` (TORCH_CUDA_ARCH_LIST=${gpu} for a PyTorch extension)`;
}

/** The coverage of every library that carries device code, on every GPU. */
export function gpuReport(libraries: Array<{path: string; code: DeviceCodeSummary}>, gpus: GpuTarget[], driver: string | null): GpuReport {
  const out: GpuLibrary[] = [];
  const problems: GpuReport['problems'] = [];
  for (const {path, code} of libraries) {
    const verdicts = gpus.map((g) => libraryVerdict(path, code, g.capability, driver)).filter((v): v is GpuVerdict => v !== null);
    if (verdicts.length === 0 && !code.problem) continue;
    const {sass, ptx} = summaryArchitectures(code);
    const modules = code.modules.filter((m) => m.images.length > 0).reduce((n, m) => n + m.count, 0);
    out.push({path, sass, ptx, modules, ...(code.withoutKernels ? {modulesWithoutKernels: code.withoutKernels} : {}), ...(code.problem ? {problem: code.problem} : {}), verdicts});
    for (const v of verdicts) {
      if (v.runs !== 'none' && v.runs !== 'ptx-too-new') continue;
      const sm = `sm_${v.gpu.replace('.', '')}`;
      const summary = v.runs === 'none'
        ? `no kernel image for ${sm}: ${basename(path)} ${v.note}`
        : `${basename(path)} has only PTX the driver cannot compile for ${sm} ("the provided PTX was compiled with an unsupported toolchain"): ${v.by}, needs a driver >= ${v.driverNeeded}`;
      problems.push({path, gpu: v.gpu, summary, fix: fixFor(path, v, v.gpu)});
    }
  }
  return {gpus, driver, ok: problems.length === 0, libraries: out, problems};
}
