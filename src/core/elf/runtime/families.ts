/**
 * The libraries CUDA loads with dlopen, by the library that loads them. A family names its
 * caller by SONAME and the names it loads by a pattern; the names themselves are read from the
 * caller's constant strings (read/elf/rodata-strings.ts), so a release that loads other names is
 * modelled by what its file says, and a caller whose file lacks the string loads nothing.
 *
 * Sources: libcudart.so.12 of CUDA 12.4.1 holds "libcuda.so.1", libnvrtc.so.12 holds
 * "libnvrtc-builtins.so.12.4" and asks it for __nvrtc_builtins__12_4_* (Debian trixie's
 * libcudart12 and libnvrtc12, test/core/elf/runtime/runtime-loads.test.ts). cuDNN's file sets
 * are NVIDIA's documented ones (cuDNN 8: ops/cnn/adv, each _infer and _train; cuDNN 9: graph,
 * engines_precompiled, engines_runtime_compiled, heuristic, ops, cnn, adv; the runtime-compiled
 * engines load NVRTC): not verified against real cuDNN, which no Debian archive carries.
 */
export interface RuntimeLoadRole {
  /** What is loaded, in words: "the NVIDIA driver (libcuda)". */
  what: string;
  /** When the caller loads it: "at the first CUDA call". */
  when: string;
  /**
   * 'library': the caller cannot work without it; 'feature': only `feature` fails;
   * 'optional': looked for, and its absence is normal (the caller goes on without it).
   */
  impact: 'library' | 'feature' | 'optional';
  feature?: string;
}

export interface RuntimeFamily {
  /** The caller, by its SONAME. */
  caller: RegExp;
  /** The names it passes to dlopen, each a whole constant string of the caller. */
  loads: RegExp;
  role(name: string): RuntimeLoadRole;
}

/** What a libcuda.so.1 nothing provides costs on a machine without an NVIDIA kernel module (Problem.feature). */
export const NO_DRIVER_FEATURE = 'CUDA on this machine, which has no NVIDIA driver (no kernel module: a build host, or a container started without GPUs)';

const DRIVER: RuntimeLoadRole = {what: 'the NVIDIA driver\'s libcuda', when: 'at the first CUDA call', impact: 'library'};

export const FAMILIES: readonly RuntimeFamily[] = [
  {
    caller: /^libcudart\.so\.\d+(\.\d+)?$/,
    loads: /libcuda\.so\.1/,
    role: () => DRIVER,
  },
  {
    caller: /^libnvrtc\.so\.\d+(\.\d+)?$/,
    loads: /libnvrtc-builtins\.so\.\d+\.\d+/,
    role: () => ({what: 'NVRTC\'s builtins (its headers and per-architecture tables)', when: 'at the first nvrtcCompileProgram, the first JIT compilation', impact: 'library'}),
  },
  {
    caller: /^libcudnn\.so\.8$/,
    loads: /libcudnn_(?:ops|cnn|adv)_(?:infer|train)\.so\.8/,
    role: (name) => name.includes('_train')
      ? {what: `cuDNN 8's ${part(name)} part`, when: 'when cuDNN first needs it (the first backward pass)', impact: 'feature', feature: 'training (backward passes)'}
      : {what: `cuDNN 8's ${part(name)} part`, when: 'when cuDNN first needs it (the first convolution, RNN or normalisation)', impact: 'library'},
  },
  {
    caller: /^libcudnn\.so\.9$/,
    loads: /libcudnn_(?:graph|engines_precompiled|engines_runtime_compiled|heuristic|ops|cnn|adv)\.so\.9/,
    role: (name) => {
      const which = part(name);
      const when = 'when cuDNN first needs it (cudnnCreate, the first operation graph)';
      if (which === 'engines_runtime_compiled') return {what: 'cuDNN 9\'s runtime-compiled engines', when, impact: 'feature', feature: 'runtime-compiled engines (fusions built with NVRTC)'};
      if (which === 'cnn') return {what: 'cuDNN 9\'s convolution part', when, impact: 'feature', feature: 'convolutions'};
      if (which === 'adv') return {what: 'cuDNN 9\'s advanced part', when, impact: 'feature', feature: 'RNNs and multi-head attention'};
      return {what: `cuDNN 9's ${which} part`, when, impact: 'library'};
    },
  },
  {
    caller: /^libcudnn_engines_runtime_compiled\.so\.9$/,
    loads: /libnvrtc\.so\.\d+(?:\.\d+)?/,
    role: () => ({what: 'NVRTC', when: 'when cuDNN first compiles an engine at run time', impact: 'feature', feature: 'runtime-compiled engines (fusions built with NVRTC)'}),
  },
  {
    caller: /^(libtorch_cuda|libcaffe2_nvrtc|libtorch_cuda_linalg)\.so$/,
    loads: /libcuda\.so\.1|libnvrtc\.so\.\d+(?:\.\d+)?|libcupti\.so\.\d+(?:\.\d+)?/,
    role: (name) => name.startsWith('libcuda.')
      ? {...DRIVER, when: 'at the first CUDA call (import torch still works)'}
      : name.startsWith('libnvrtc')
        ? {what: 'NVRTC', when: 'at the first JIT-compiled kernel', impact: 'feature', feature: 'JIT-compiled kernels (fusion, torch.compile, jiterator)'}
        : {what: 'CUPTI', when: 'when the profiler starts', impact: 'feature', feature: 'the profiler (torch.profiler, Kineto)'},
  },
  {
    caller: /^libnccl\.so\.\d+$/,
    loads: /libnccl-net(?:-[\w.]+)?\.so/,
    role: () => ({what: 'an NCCL network plugin', when: 'at the first communicator (ncclCommInitRank)', impact: 'optional', feature: 'a network plugin (InfiniBand, AWS EFA); NCCL uses its own sockets and IB transport without one'}),
  },
];

/** libcudnn_cnn_infer.so.8 -> cnn_infer; libcudnn_graph.so.9 -> graph. */
function part(name: string): string {
  return name.replace(/^libcudnn_/, '').replace(/\.so\.\d+$/, '');
}

export function familyOf(soname: string | null): RuntimeFamily | undefined {
  return soname === null ? undefined : FAMILIES.find((f) => f.caller.test(soname));
}
