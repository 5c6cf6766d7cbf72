import {readdirSync} from 'node:fs';

/**
 * File names of CUDA libraries: toolkit and math libraries as NVIDIA names them (the pip
 * wheels, the redist archives and distribution packages use the same sonames), plus the
 * user-mode driver. Used to tell which directories matter, never to decide what binds:
 * that is the check engine's job.
 */
const CUDA_LIB = /^lib(cudart|cublas|cublasLt|cufft|cufftw|curand|cusolver|cusolverMg|cusparse|cusparseLt|cudnn\w*|nvJitLink|nvrtc|nvrtc-builtins|nvToolsExt|cupti|nvperf_host|nvperf_target|npp\w+|nvjpeg|nccl|cufile|cufile_rdma|nvfatbin|nvptxcompiler_static|nvvm|cudla|cuda|nvidia-ptxjitcompiler|nvidia-nvvm|cudadebugger)\.so(\.[\d.]+)?$/;

const DRIVER_LIB = /^lib(cuda|nvidia-[\w-]+|cudadebugger)\.so(\.[\d.]+)?$/;

export function isCudaLibraryName(name: string): boolean {
  return CUDA_LIB.test(name);
}

/** libcuda and the other libraries a driver installs (not a toolkit's). */
export function isDriverLibraryName(name: string): boolean {
  return DRIVER_LIB.test(name);
}

/** The CUDA library files of a directory, sorted; empty when it cannot be listed. */
export function cudaLibrariesIn(dir: string): string[] {
  try {
    return readdirSync(dir).filter(isCudaLibraryName).sort();
  } catch {
    return [];
  }
}
