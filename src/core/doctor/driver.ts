import {execFileSync} from 'node:child_process';
import {existsSync, readFileSync, readdirSync} from 'node:fs';
import {basename, join} from 'node:path';
import {firstOnPath} from '../system/python-env.js';
import {isDriverVersion} from '../versions/driver-table.js';
import {libcudaVersion, parseProcDriverVersion} from '../versions/driver-version.js';
import {displayPath, sysPath, sysRealpath} from './sysroot.js';
import type {DoctorContext, Finding} from './types.js';

export type DriverSource = '/proc/driver/nvidia/version' | '/sys/module/nvidia/version' | 'libcuda' | 'nvidia-smi';

export interface DriverFact {
  version: string;
  source: DriverSource;
  /** The file or command it was read from. */
  evidence: string;
  /** From /proc: which kernel module flavour is loaded. */
  kernelModule?: 'proprietary' | 'open';
  /**
   * False when only the user-space driver was found and no NVIDIA kernel module is loaded
   * (no /proc/driver/nvidia, no /sys/module/nvidia; WSL2's dxg excepted): CUDA then finds no GPU.
   */
  kernelModuleLoaded?: boolean;
}

/** Where driver packages put libcuda when the cache cannot say (Debian/Ubuntu, RHEL, WSL2). */
const LIBCUDA_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64/nvidia', '/usr/lib64', '/usr/lib/wsl/lib'];

function readSmall(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').slice(0, 4096);
  } catch {
    return undefined;
  }
}

/**
 * The installed driver, in the order: the kernel module's /proc file, then
 * /sys/module/nvidia/version, then the libcuda.so.<version> the loader cache points to
 * (or a well-known driver directory holds), then `nvidia-smi` when it is on PATH.
 * Undefined when the machine has no driver (a build machine, a container without a GPU).
 */
export function readDriver(ctx: DoctorContext, libcudaFromCache?: string): DriverFact | undefined {
  const proc = sysPath(ctx, '/proc/driver/nvidia/version');
  const procText = readSmall(proc);
  const fromProc = procText === undefined ? undefined : parseProcDriverVersion(procText);
  if (fromProc) return {version: fromProc.version, source: '/proc/driver/nvidia/version', evidence: displayPath(ctx, proc), kernelModule: fromProc.kernelModule};

  const sys = sysPath(ctx, '/sys/module/nvidia/version');
  const sysText = readSmall(sys)?.trim();
  if (sysText && isDriverVersion(sysText)) return {version: sysText, source: '/sys/module/nvidia/version', evidence: displayPath(ctx, sys)};

  const libcuda = findLibcuda(ctx, libcudaFromCache);
  if (libcuda) return {...libcuda, kernelModuleLoaded: kernelSideLoaded(ctx, libcuda)};

  return fromNvidiaSmi(ctx);
}

/**
 * Whether a kernel side is there for a user-space libcuda: the nvidia module's /proc or /sys
 * directory (its version file may be unreadable), or WSL2's /dev/dxg, which serves
 * /usr/lib/wsl/lib/libcuda without an nvidia module.
 */
function kernelSideLoaded(ctx: DoctorContext, libcuda: DriverFact): boolean {
  if (libcuda.evidence.includes('/usr/lib/wsl/')) return true;
  return ['/proc/driver/nvidia', '/sys/module/nvidia', '/dev/dxg'].some((p) => existsSync(sysPath(ctx, p)));
}

/** A user-space driver without a kernel module: every CUDA call fails (cudaErrorNoDevice / "no CUDA-capable device"). */
export function noKernelModuleFinding(driver: DriverFact | undefined): Finding | undefined {
  if (driver?.kernelModuleLoaded !== false) return undefined;
  return {
    id: 'driver.no-kernel-module',
    severity: 'error',
    title: `The NVIDIA user-space driver ${driver.version} is installed but no NVIDIA kernel module is loaded: CUDA programs find no GPU`,
    evidence: [`libcuda: ${driver.version} (${driver.evidence})`, '/proc/driver/nvidia and /sys/module/nvidia: absent (no kernel module loaded)'],
    fix: 'Load it: `sudo modprobe nvidia`. If that fails, the module is not built for the running kernel (`uname -r`: reinstall the driver or its DKMS package) or Secure Boot refuses it (enroll the key or sign the module); a reboot after a driver install also loads it',
  };
}

/** The user-space driver: the libcuda.so.<version> the loader cache (or a driver directory) gives. */
export function findLibcuda(ctx: DoctorContext, fromCache: string | undefined): DriverFact | undefined {
  const candidates: string[] = [];
  if (fromCache) candidates.push(fromCache);
  for (const dir of LIBCUDA_DIRS) candidates.push(join(dir, 'libcuda.so.1'));
  for (const candidate of candidates) {
    const real = sysRealpath(ctx, candidate);
    const version = real ? libcudaVersion(basename(real)) : undefined;
    if (real && version) return {version, source: 'libcuda', evidence: `${displayPath(ctx, candidate)} -> ${displayPath(ctx, real)}`};
  }
  // A driver directory may hold libcuda.so.<version> without the libcuda.so.1 link.
  for (const dir of LIBCUDA_DIRS) {
    let names: string[];
    try {
      names = readdirSync(sysPath(ctx, dir));
    } catch {
      continue;
    }
    const found = names.map((n) => ({n, v: libcudaVersion(n)})).find((x) => x.v);
    if (found) return {version: found.v!, source: 'libcuda', evidence: join(dir, found.n)};
  }
  return undefined;
}

/** The one optional process doctor starts besides Python: only when every file source failed. */
function fromNvidiaSmi(ctx: DoctorContext): DriverFact | undefined {
  const smi = firstOnPath(['nvidia-smi'], ctx.env.PATH);
  if (!smi) return undefined;
  try {
    const out = execFileSync(smi, ['--query-gpu=driver_version', '--format=csv,noheader'], {
      encoding: 'utf8', timeout: 10000, stdio: ['ignore', 'pipe', 'ignore'], env: ctx.env,
    });
    const version = out.split('\n').map((l) => l.trim()).find(isDriverVersion);
    return version ? {version, source: 'nvidia-smi', evidence: `${smi} --query-gpu=driver_version`} : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A kernel module and a user-space libcuda of different versions (a driver upgraded without a
 * reboot): every CUDA program then fails with "Driver/library version mismatch".
 */
export function driverMismatchFinding(kernel: DriverFact | undefined, userSpace: DriverFact | undefined): Finding | undefined {
  if (!kernel || !userSpace || kernel.source === 'libcuda' || kernel.source === 'nvidia-smi') return undefined;
  if (kernel.version === userSpace.version) return undefined;
  return {
    id: 'driver.library-mismatch',
    severity: 'error',
    title: `The NVIDIA kernel module is ${kernel.version} but the user-space driver is ${userSpace.version}: CUDA programs fail with "Driver/library version mismatch"`,
    evidence: [`kernel module: ${kernel.version} (${kernel.evidence})`, `libcuda: ${userSpace.version} (${userSpace.evidence})`],
    fix: 'Reboot (or unload and reload the nvidia kernel modules) so the kernel module matches the installed driver',
  };
}
