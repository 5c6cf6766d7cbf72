import {readFileSync} from 'node:fs';
import {UsageError} from '../../errors.js';
import type {GpuTarget} from '../report-types.js';

/**
 * The GPUs a check is for (issue 33): named on the command line (`--gpu 8.6`, `--gpu sm_120`,
 * repeatable: a build host without a GPU checks for its deployment target), or this machine's,
 * every GPU nvidia-smi lists.
 */

/** `8.6`, `12.0`, `sm_86`, `sm_120`, `sm_90a`, `compute_90`, `86`: a compute capability. */
export function parseGpu(text: string): GpuTarget {
  const t = text.trim().toLowerCase();
  let major: number | undefined;
  let minor: number | undefined;
  let m = /^(\d{1,2})\.(\d)$/.exec(t);
  if (m) {
    major = Number(m[1]);
    minor = Number(m[2]);
  } else if ((m = /^(?:sm_|compute_)?(\d{2,3})[af]?$/.exec(t))) {
    const n = Number(m[1]);
    major = Math.floor(n / 10);
    minor = n % 10;
  }
  if (major === undefined || minor === undefined || major < 1 || major > 19) {
    throw new UsageError(`--gpu ${text}: not a GPU architecture`,
      'Give the compute capability (8.6, 12.0) or the architecture (sm_86, sm_120): `nvidia-smi --query-gpu=compute_cap --format=csv` on that machine, or NVIDIA\'s table at developer.nvidia.com/cuda-gpus.');
  }
  return {capability: `${major}.${minor}`, name: `sm_${major}${minor}`, source: `--gpu ${text}`};
}

export interface MachineGpus {
  gpus: GpuTarget[];
  /** Why none could be listed: no nvidia-smi, or its error. */
  reason?: string;
}

/** This machine's GPUs, one per line of `nvidia-smi --query-gpu=index,name,compute_cap` (5 s at most). */
export function machineGpus(env: NodeJS.ProcessEnv = process.env): MachineGpus {
  // Loaded here, not with the module: a cached check that asks no GPU loads no child_process (issue 42).
  const {spawnSync} = process.getBuiltinModule('node:child_process') as typeof import('node:child_process');
  const r = spawnSync('nvidia-smi', ['--query-gpu=index,name,compute_cap', '--format=csv,noheader'], {encoding: 'utf8', timeout: 5000, env});
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code;
    return {gpus: [], reason: code === 'ENOENT' ? 'nvidia-smi is not installed (no NVIDIA driver here)' : `nvidia-smi failed: ${r.error.message}`};
  }
  if (r.status !== 0) return {gpus: [], reason: `nvidia-smi exited ${r.status}: ${(r.stderr || r.stdout).trim().split('\n')[0] ?? ''}`};
  return parseNvidiaSmi(r.stdout);
}

/** `0, NVIDIA GeForce RTX 3090, 8.6` lines; a GPU whose capability nvidia-smi does not print (an old driver: [N/A]) is left out with the reason. */
export function parseNvidiaSmi(text: string): MachineGpus {
  const gpus: GpuTarget[] = [];
  const unknown: string[] = [];
  for (const line of text.split('\n').map((l) => l.trim()).filter(Boolean)) {
    const parts = line.split(',').map((p) => p.trim());
    const cc = parts[parts.length - 1] ?? '';
    const index = parts[0] ?? '?';
    const name = parts.slice(1, -1).join(',');
    if (!/^\d{1,2}\.\d$/.test(cc)) {
      unknown.push(`GPU ${index} (${name || line})`);
      continue;
    }
    const g = parseGpu(cc);
    gpus.push({...g, source: `nvidia-smi: GPU ${index}, ${name}`});
  }
  return {gpus, ...(unknown.length > 0 ? {reason: `nvidia-smi does not say the compute capability of ${unknown.join(', ')} (a driver older than 510 lacks compute_cap): name it with --gpu`} : {})};
}

/** The same GPU model listed once (a machine with eight A100s is checked for sm_80 once). */
export function distinctGpus(gpus: GpuTarget[]): GpuTarget[] {
  const seen = new Map<string, GpuTarget>();
  for (const g of gpus) if (!seen.has(g.capability)) seen.set(g.capability, g);
  return [...seen.values()];
}

/** The kernel module's driver version from /proc/driver/nvidia/version, or null (none loaded). */
export function machineDriver(root = ''): string | null {
  try {
    const text = readFileSync(`${root}/proc/driver/nvidia/version`, 'utf8');
    return /Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)/.exec(text)?.[1] ?? null;
  } catch {
    return null;
  }
}
