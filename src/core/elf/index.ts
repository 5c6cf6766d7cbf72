/**
 * The loader model's public entry (`cudaenv check`, switching, conda hooks, `link`, `doctor`,
 * the Action). Code outside elf/ imports this file or the lighter api.ts, nothing else.
 *
 *   const report = await checkLibraries({targets: ['/usr/local/cuda/lib64'], ldLibraryPath: process.env.LD_LIBRARY_PATH});
 *   if (!report.ok) console.error(firstProblemLine(report));
 *
 * How a check flows through the stages (read, search, bind, explain; caches beside): README.md.
 */
export * from './api.js';
export {elfSharedObjectsIn} from './search/check-targets.js';
export {describeObject} from './explain/explain-finding.js';
export {gpuCoverage, machineGpuLine} from './gpu/check-gpu.js';
export {parseNvidiaSmi, type MachineGpus} from './gpu/gpu-targets.js';
export {pytorchIndexesFor, pytorchInstall} from './gpu/pytorch-wheels.js';
export type {DeviceCodeSummary, GpuLibrary, GpuReport, GpuTarget, GpuVerdict} from './report-types.js';
