import {compareDotted} from './version.js';

/**
 * What each CUDA release compiles for and what a driver JIT-compiles: GPU architecture facts per
 * CUDA MAJOR.MINOR (issue 33). Sources:
 * - `ptx`: the PTX ISA version each release writes, from NVIDIA's "PTX ISA" document, section
 *   "Release Notes" (PTX ISA 7.0 with CUDA 11.0 ... 8.5 with 12.5 and 12.6, 8.7 with 12.8, 8.8
 *   with 12.9, 9.0 with 13.0, 9.1 with 13.1); checked here against the `.version` line of the PTX
 *   that nvcc 13.0 writes and of Debian's CUDA 12.4 libraries (`cuobjdump -ptx`).
 * - `driver`: the minimum Linux driver of the release's first update (the release notes' table
 *   "CUDA Toolkit and Corresponding Driver Versions", as src/core/doctor/driver-table.ts copies
 *   it): a driver below it cannot JIT-compile that release's PTX ("the provided PTX was compiled
 *   with an unsupported toolchain").
 * - `sass`: the real architectures `nvcc --list-gpu-code` lists (13.0 checked here with nvcc
 *   13.0.88: sm_75 sm_80 sm_86 sm_87 sm_88 sm_89 sm_90 sm_100 sm_110 sm_103 sm_120 sm_121), and
 *   for older releases the "Virtual Architecture Feature List" of each release's nvcc manual:
 *   sm_35/37 dropped in 12.0, sm_50-sm_72 in 13.0 (deprecated from 12.8), sm_101 renamed
 *   sm_110 in 13.0; Blackwell (sm_100, sm_120) from 12.8, sm_103 and sm_121 from 12.9.
 */
export interface CudaGpuFacts {
  cuda: string;
  ptx: string;
  driver: string;
  /** Compute capabilities nvcc of this release compiles SASS for, "8.6". */
  sass: readonly string[];
}

const KEPLER_TO_AMPERE = ['3.5', '3.7', '5.0', '5.2', '5.3', '6.0', '6.1', '6.2', '7.0', '7.2', '7.5', '8.0'];
const MAXWELL_TO_HOPPER = ['5.0', '5.2', '5.3', '6.0', '6.1', '6.2', '7.0', '7.2', '7.5', '8.0', '8.6', '8.7', '8.9', '9.0'];

export const CUDA_GPU_FACTS: readonly CudaGpuFacts[] = [
  {cuda: '11.0', ptx: '7.0', driver: '450.36.06', sass: KEPLER_TO_AMPERE},
  {cuda: '11.1', ptx: '7.1', driver: '455.23', sass: [...KEPLER_TO_AMPERE, '8.6']},
  {cuda: '11.2', ptx: '7.2', driver: '460.27.03', sass: [...KEPLER_TO_AMPERE, '8.6']},
  {cuda: '11.3', ptx: '7.3', driver: '465.19.01', sass: [...KEPLER_TO_AMPERE, '8.6']},
  {cuda: '11.4', ptx: '7.4', driver: '470.42.01', sass: [...KEPLER_TO_AMPERE, '8.6', '8.7']},
  {cuda: '11.5', ptx: '7.5', driver: '495.29.05', sass: [...KEPLER_TO_AMPERE, '8.6', '8.7']},
  {cuda: '11.6', ptx: '7.6', driver: '510.39.01', sass: [...KEPLER_TO_AMPERE, '8.6', '8.7']},
  {cuda: '11.7', ptx: '7.7', driver: '515.43.04', sass: [...KEPLER_TO_AMPERE, '8.6', '8.7']},
  {cuda: '11.8', ptx: '7.8', driver: '520.61.05', sass: [...KEPLER_TO_AMPERE, '8.6', '8.7', '8.9', '9.0']},
  {cuda: '12.0', ptx: '8.0', driver: '525.60.13', sass: MAXWELL_TO_HOPPER},
  {cuda: '12.1', ptx: '8.1', driver: '530.30.02', sass: MAXWELL_TO_HOPPER},
  {cuda: '12.2', ptx: '8.2', driver: '535.54.03', sass: MAXWELL_TO_HOPPER},
  {cuda: '12.3', ptx: '8.3', driver: '545.23.06', sass: MAXWELL_TO_HOPPER},
  {cuda: '12.4', ptx: '8.4', driver: '550.54.14', sass: MAXWELL_TO_HOPPER},
  {cuda: '12.5', ptx: '8.5', driver: '555.42.02', sass: MAXWELL_TO_HOPPER},
  {cuda: '12.6', ptx: '8.5', driver: '560.28.03', sass: MAXWELL_TO_HOPPER},
  {cuda: '12.8', ptx: '8.7', driver: '570.26', sass: [...MAXWELL_TO_HOPPER, '10.0', '10.1', '12.0']},
  {cuda: '12.9', ptx: '8.8', driver: '575.51.03', sass: [...MAXWELL_TO_HOPPER, '10.0', '10.1', '10.3', '12.0', '12.1']},
  {cuda: '13.0', ptx: '9.0', driver: '580.65.06', sass: ['7.5', '8.0', '8.6', '8.7', '8.8', '8.9', '9.0', '10.0', '10.3', '11.0', '12.0', '12.1']},
  {cuda: '13.1', ptx: '9.1', driver: '590.44.01', sass: ['7.5', '8.0', '8.6', '8.7', '8.8', '8.9', '9.0', '10.0', '10.3', '11.0', '12.0', '12.1']},
];

/** "8.6" -> [8, 6]; "12.0" -> [12, 0]. */
export function capabilityParts(cc: string): [number, number] {
  const [a, b] = cc.split('.').map(Number);
  return [a ?? 0, b ?? 0];
}

export function compareCapability(a: string, b: string): number {
  const [am, an] = capabilityParts(a);
  const [bm, bn] = capabilityParts(b);
  return am - bm || an - bn;
}


/** The facts of a toolkit's MAJOR.MINOR ("12.4.1" -> 12.4's), or undefined for one the table does not know. */
export function gpuFactsOf(toolkit: string): CudaGpuFacts | undefined {
  const m = /^(\d+)\.(\d+)/.exec(toolkit);
  return m ? CUDA_GPU_FACTS.find((f) => f.cuda === `${m[1]}.${m[2]}`) : undefined;
}

/**
 * The oldest driver that JIT-compiles PTX of this ISA version: the first release writing it (or a
 * newer one), its minimum driver. Undefined for a PTX ISA newer than every release in the table.
 */
export function driverForPtx(isa: string): {driver: string; cuda: string} | undefined {
  const row = CUDA_GPU_FACTS.find((f) => compareDotted(f.ptx, isa) >= 0);
  return row ? {driver: row.driver, cuda: row.cuda} : undefined;
}

/** The newest PTX ISA a driver JIT-compiles (the newest release whose minimum driver it meets), or undefined below every row. */
export function ptxForDriver(driver: string): {ptx: string; cuda: string} | undefined {
  const rows = CUDA_GPU_FACTS.filter((f) => compareDotted(driver, f.driver) >= 0);
  const row = rows[rows.length - 1];
  return row ? {ptx: row.ptx, cuda: row.cuda} : undefined;
}

/** The releases whose nvcc compiles SASS for this compute capability, oldest first. */
export function releasesCompilingFor(cc: string): string[] {
  return CUDA_GPU_FACTS.filter((f) => f.sass.includes(cc)).map((f) => f.cuda);
}
