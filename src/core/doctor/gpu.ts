/**
 * The machine's GPUs against the active toolkit and the Python environment's CUDA libraries
 * (issue 33, item 3): a toolkit whose nvcc cannot compile for the GPU (CUDA 13 and a V100's
 * sm_70; CUDA 12.4 and an RTX 50's sm_120), and PyTorch or a wheel whose libraries carry no code
 * for it (`no kernel image is available for execution on the device` at the first kernel), each
 * with the release or the PyTorch index that covers it. The GPUs come from nvidia-smi (the one
 * more process doctor starts, only when a driver is loaded); the libraries' device code from
 * their fat binaries' headers (cached per file identity in the store).
 */
import {execFileSync} from 'node:child_process';
import {basename} from 'node:path';
import {firstOnPath} from '../system/python-env.js';
import {installedLabels} from '../store/registry.js';
import {gpuFactsOf, releasesCompilingFor} from '../versions/gpu-targets.js';
import {compareDotted} from '../versions/version.js';
import {elfSharedObjectsIn, gpuCoverage, parseNvidiaSmi, pytorchIndexesFor, pytorchInstall, type GpuReport, type GpuTarget} from '../elf/index.js';
import type {DriverFact} from './driver.js';
import type {ActiveToolkit} from './toolkit.js';
import type {DoctorContext, Finding} from './types.js';

export interface GpuFacts {
  /** Every GPU nvidia-smi lists (the same model once), or none. */
  gpus: GpuTarget[];
  /** Why none are listed (no driver, no nvidia-smi, an old driver without compute_cap). */
  reason: string | null;
  /** Per library of the Python environment that carries device code: what it runs on each GPU. */
  libraries: Array<{path: string; sass: string[]; ptx: string[]; runs: Record<string, string>}>;
}

/** The machine's GPUs from `nvidia-smi --query-gpu=index,name,compute_cap` (PATH as doctor's environment has it). */
export function readMachineGpus(ctx: DoctorContext): {gpus: GpuTarget[]; reason: string | null} {
  const smi = firstOnPath(['nvidia-smi'], ctx.env.PATH);
  if (!smi) return {gpus: [], reason: 'nvidia-smi is not on PATH'};
  try {
    const out = execFileSync(smi, ['--query-gpu=index,name,compute_cap', '--format=csv,noheader'], {
      encoding: 'utf8', timeout: 10000, stdio: ['ignore', 'pipe', 'ignore'], env: ctx.env,
    });
    const parsed = parseNvidiaSmi(out);
    const seen = new Set<string>();
    const gpus = parsed.gpus.filter((g) => !seen.has(g.capability) && seen.add(g.capability));
    return {gpus, reason: parsed.reason ?? null};
  } catch (error) {
    return {gpus: [], reason: `${smi} --query-gpu=compute_cap failed: ${(error as Error).message.split('\n')[0]}`};
  }
}

const PYTORCH_LIB = /^lib(torch_cuda|c10_cuda|torch_cuda_linalg)[^/]*\.so/;

export async function gpuFindings(ctx: DoctorContext, driver: DriverFact | undefined, active: ActiveToolkit | undefined, pyLibDirs: string[]): Promise<{findings: Finding[]; facts: GpuFacts}> {
  const findings: Finding[] = [];
  if (!driver) return {findings, facts: {gpus: [], reason: 'no NVIDIA driver is loaded', libraries: []}};
  const {gpus, reason} = readMachineGpus(ctx);
  const facts: GpuFacts = {gpus, reason, libraries: []};
  if (gpus.length === 0) return {findings, facts};
  const describe = (g: GpuTarget) => `${g.name} (${g.source.replace(/^nvidia-smi: /, '')})`;

  // The toolkit: can its nvcc compile for each GPU?
  const version = active?.version;
  const known = version ? gpuFactsOf(version) : undefined;
  if (version && known) {
    for (const g of gpus) {
      if (known.sass.includes(g.capability)) continue;
      const releases = releasesCompilingFor(g.capability);
      if (releases.length === 0) continue;
      const newer = compareDotted(releases[0]!, known.cuda) > 0;
      const target = newer ? releases[0]! : releases[releases.length - 1]!;
      const installed = installedLabels(ctx.paths).filter((l) => {
        const f = gpuFactsOf(l);
        return f?.sass.includes(g.capability);
      });
      const pick = installed.sort(compareDotted).at(-1);
      findings.push({
        id: 'gpu.toolkit-cannot-compile',
        severity: 'warning',
        title: newer
          ? `CUDA ${version}'s nvcc cannot compile for ${describe(g)}: it knows no ${g.name} (CUDA ${releases[0]} is the first release that does)`
          : `CUDA ${version}'s nvcc cannot compile for ${describe(g)}: CUDA ${known.cuda} dropped ${g.name} (CUDA ${target} is the newest release that compiles for it)`,
        evidence: [
          `active toolkit: ${active!.dir} (${version}, ${active!.source})`,
          `nvcc ${known.cuda} compiles for ${known.sass.map((c) => `sm_${c.replace('.', '')}`).join(' ')}`,
          `\`nvcc -arch=${g.name}\` fails with "Unsupported gpu architecture"; extensions built for this GPU (TORCH_CUDA_ARCH_LIST, -arch=native) do not build`,
        ],
        fix: pick ? `cudaenv use ${pick}` : `cudaenv install ${target} && cudaenv use ${target}`,
      });
    }
  }

  // The Python environment's CUDA libraries: torch/lib and nvidia/*/lib.
  const paths = (await Promise.all(pyLibDirs.map((d) => elfSharedObjectsIn(d).catch(() => [] as string[])))).flat();
  if (paths.length === 0) return {findings, facts};
  const report: GpuReport = gpuCoverage(paths, gpus, driver.version, ctx.paths.checkCache);
  facts.libraries = report.libraries.map((l) => ({path: l.path, sass: l.sass, ptx: l.ptx, runs: Object.fromEntries(l.verdicts.map((v) => [v.gpu, v.runs]))}));
  for (const p of report.problems) {
    const g = gpus.find((x) => x.capability === p.gpu)!;
    findings.push({
      id: PYTORCH_LIB.test(basename(p.path)) ? 'pytorch.no-kernel-image' : 'gpu.no-kernel-image',
      severity: 'error',
      title: `${p.summary} (${describe(g)})`,
      evidence: [p.path, `\`cudaenv check ${p.path} --gpu ${p.gpu}\` says the same without a GPU`],
      fix: p.fix,
    });
  }
  // PyTorch only through PTX: it runs, but every kernel is JIT-compiled at first use.
  for (const l of report.libraries) {
    if (!PYTORCH_LIB.test(basename(l.path))) continue;
    for (const v of l.verdicts) {
      if (v.runs !== 'ptx') continue;
      const index = pytorchIndexesFor(v.gpu).find((i) => i.sass.includes(v.gpu));
      findings.push({
        id: 'pytorch.ptx-jit-only',
        severity: 'warning',
        title: `${basename(l.path)} runs on ${v.gpu.replace(/^/, 'sm_').replace('.', '')} only by JIT-compiling its PTX (${v.by}) at first use: minutes to hours before the first step, again whenever ~/.nv/ComputeCache is cold`,
        evidence: [l.path, `carries ${l.sass.join(' ')} ${l.ptx.join(' ')}`],
        fix: index ? `install a PyTorch build with SASS for it: \`${pytorchInstall(index)}\`` : null,
      });
    }
  }
  return {findings, facts};
}
