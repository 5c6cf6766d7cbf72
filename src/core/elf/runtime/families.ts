/**
 * What a library's file cannot say about the libraries it loads with dlopen. Which names it loads
 * is read from the file itself (runtime/callers.ts: its `.note.dlopen` metadata, else its constant
 * strings); when it loads them, whether a failure stops it or is ignored, and which loads serve an
 * optional feature are not in the file, and are kept here as facts, per library, keyed by what the
 * file is (its SONAME stem: libtorch_cuda for libtorch_cuda.so and Debian's libtorch_cuda.so.2.6),
 * never by one spelling of its name. A load no fact covers gets the default role (defaultRole):
 * a warning, as nothing says the library cannot work without it.
 *
 * Each fact names what showed it. "The torch image" is Debian trixie's python3-torch-cuda 2.6.0
 * with CUDA 12.4.1 (bench/fetch-torch.sh), run in a chroot without a GPU with an LD_PRELOAD spy
 * logging every dlopen and its caller (test/core/elf/runtime/callers.test.ts builds the spy).
 */
import {RUNTIME_ENV_VARIABLES, type RuntimeEnv} from './runtime-env.js';
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

export interface LoadFact {
  /** The loaded names this fact is about (matched in whole). */
  name: RegExp;
  role(name: string, caller: string): RuntimeLoadRole;
}

export interface CallerFacts {
  /** What the caller is: its SONAME (or file name) without ".so" and what follows it. */
  stem?: RegExp;
  /** Or: a distinctive string its constant data carries (a runtime linked into it). */
  carries?: string;
  facts: LoadFact[];
}

/** What a libcuda.so.1 nothing provides costs on a machine without an NVIDIA kernel module (Problem.feature). */
export const NO_DRIVER_FEATURE = 'CUDA on this machine, which has no NVIDIA driver (no kernel module: a build host, or a container started without GPUs)';

/** The libraries only the NVIDIA driver installs: nothing else can provide them. */
export const DRIVER_LIBRARIES: ReadonlySet<string> = new Set(['libcuda.so.1', 'libnvidia-ml.so.1']);

/**
 * What a driver library nothing provides would have defined, by name: every one of the 656
 * symbols the real libcuda.so.1 of driver 550.163.01 exports starts with "cu" (cuInit, cuGetProcAddress,
 * cudbgApiInit, ...), and its symbols carry no version, so an unversioned reference of that shape
 * in an object that needs the missing libcuda.so.1 is that library's, not the loading program's.
 */
export const DRIVER_LIBRARY_SYMBOLS: ReadonlyMap<string, RegExp> = new Map([['libcuda.so.1', /^cu/]]);

const DRIVER: RuntimeLoadRole = {what: 'the NVIDIA driver\'s libcuda', when: 'at the first CUDA call', impact: 'library'};

/**
 * Imported functions that call dlopen for their caller, with the name the caller passes: a caller
 * that imports one loads the names of its strings as if it imported dlopen. PyTorch's
 * at::DynamicLibrary::DynamicLibrary(const char *name, const char *alt_name, bool leak_handle),
 * defined by libtorch_cpu (which imports dlopen), imported by libtorch_cuda (which does not) for
 * NVRTC and the lazily loaded libtorch_cuda_linalg (the torch image: libtorch_cuda.so.2.6 imports
 * _ZN2at14DynamicLibraryC1EPKcS2_b and no dlopen; its .rodata holds "libnvrtc.so.").
 */
// Every pattern is of a C++ name (`_ZN...`): runtime/callers.ts tries them only on such names.
export const DLOPEN_WRAPPERS: readonly RegExp[] = [/^_ZN2at14DynamicLibraryC[12]EPKcS2_b$/];

/**
 * The CUDA runtime's own message for cudaErrorInsufficientDriver: libcudart.so.12 carries it, and so
 * does every object cudart_static is linked into (nvcc links it by default; cuBLAS, cuRAND,
 * cuSPARSE, cuBLASLt and NCCL 2.22 of the torch image carry it; libtorch_cuda, which links the
 * shared libcudart, does not).
 */
export const STATIC_CUDART_MARKER = 'CUDA driver version is insufficient for CUDA runtime version';

export const CALLER_FACTS: readonly CallerFacts[] = [
  {
    // libcudart.so.12 of CUDA 12.4.1 dlopens "libcuda.so.1" at the first CUDA call and every call
    // fails without it (runtime-loads.test.ts: cudaGetDeviceCount returns cudaErrorInsufficientDriver
    // or cudaErrorStubLibrary; the torch image: libcudart.so.12 dlopens libcuda.so.1 at
    // torch.cuda.is_available(), not at import).
    stem: /^libcudart$/,
    facts: [{name: /^libcuda\.so\.1$/, role: () => DRIVER}],
  },
  {
    // libnvrtc.so.12 dlopens its builtins at the first nvrtcCompileProgram and the compilation fails
    // without them (runtime-loads.test.ts: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE with another release's).
    stem: /^libnvrtc$/,
    facts: [{name: /^libnvrtc-builtins\.so\.\d+\.\d+$/, role: () => ({what: 'NVRTC\'s builtins (its headers and per-architecture tables)', when: 'at the first nvrtcCompileProgram, the first JIT compilation', impact: 'library'})}],
  },
  {
    // The torch image, `import torch` alone: libcublasLt.so.12's initializer dlopens libcuda.so.1
    // twice, before any CUDA call, and import goes on when it fails (no GPU there; with libcuda
    // absent the import works too). libcudart's own load of libcuda is the one that fails the calls.
    stem: /^libcublasLt$/,
    facts: [{name: /^libcuda\.so\.1$/, role: () => ({what: 'the NVIDIA driver\'s libcuda', when: 'in its initializer, when it is loaded (failure ignored)', impact: 'optional', feature: 'nothing: cuBLASLt goes on without it, and libcudart\'s load of libcuda.so.1 is the one CUDA calls need'})}],
  },
  {
    // nvJitLink 12.4 (Debian trixie's libnvjitlink12; its strings name "libcuda.so" and
    // "libnvvm.so"), run in a trixie root under the dlopen spy linking inputs NVRTC 12.4 made
    // (a relocatable cubin, PTX, LTO-IR with -lto; test/core/elf/runtime/corpus.test.ts):
    // nvJitLinkCreate dlopens "libcuda.so" (cuInit, cuGetExportTable: its cache of compiled code);
    // without one anywhere every input links all the same ("no driver so no cache"), and with the
    // toolkit's stub first nvJitLinkCreate fails (NVJITLINK_ERROR_INTERNAL), which the stub check
    // says. "libnvvm.so" was never loaded, for any input: nvJitLink has NVVM built in, and the name
    // belongs to the device linker it embeds ("elfLink nvvm error", "__nvvmHandle"), which it hands
    // its own NVVM.
    stem: /^libnvJitLink$/,
    facts: [
      {name: /^libcuda\.so$/, role: () => ({what: 'the NVIDIA driver\'s libcuda', when: 'at nvJitLinkCreate, for its cache of compiled code (without one it links all the same, uncached)', impact: 'optional', feature: 'nvJitLink\'s cache of compiled code (it links without it)'})},
      {name: /^libnvvm\.so(?:\.\d+)*$/, role: () => ({what: 'libnvvm', when: 'never in a real run: nvJitLink has NVVM built in (the name is its embedded device linker\'s)', impact: 'optional', feature: 'nothing: nvJitLink compiles LTO-IR with the NVVM built into it'})},
    ],
  },
  {
    // cuDNN 8 and 9 load their parts by name when first needed. NVIDIA's documented file sets
    // (cuDNN 8: ops/cnn/adv, each _infer and _train; cuDNN 9: graph, engines_precompiled,
    // engines_runtime_compiled, heuristic, ops, cnn, adv): not verified against a real cuDNN, which
    // no Debian archive carries (the torch image's libcudnn.so.9 is a 23 KB stand-in).
    stem: /^libcudnn$/,
    facts: [
      {name: /^libcudnn_(?:ops|cnn|adv)_(?:infer|train)\.so\.8$/, role: (name) => name.includes('_train')
        ? {what: `cuDNN 8's ${part(name)} part`, when: 'when cuDNN first needs it (the first backward pass)', impact: 'feature', feature: 'training (backward passes)'}
        : {what: `cuDNN 8's ${part(name)} part`, when: 'when cuDNN first needs it (the first convolution, RNN or normalisation)', impact: 'library'}},
      {name: /^libcudnn_(?:graph|engines_precompiled|engines_runtime_compiled|heuristic|ops|cnn|adv)\.so\.9$/, role: (name) => {
        const which = part(name);
        const when = 'when cuDNN first needs it (cudnnCreate, the first operation graph)';
        if (which === 'engines_runtime_compiled') return {what: 'cuDNN 9\'s runtime-compiled engines', when, impact: 'feature', feature: 'runtime-compiled engines (fusions built with NVRTC)'};
        if (which === 'cnn') return {what: 'cuDNN 9\'s convolution part', when, impact: 'feature', feature: 'convolutions'};
        if (which === 'adv') return {what: 'cuDNN 9\'s advanced part', when, impact: 'feature', feature: 'RNNs and multi-head attention'};
        return {what: `cuDNN 9's ${which} part`, when, impact: 'library'};
      }},
    ],
  },
  {
    // cuDNN 9's runtime-compiled engines build fusions with NVRTC (NVIDIA's cuDNN 9 documentation).
    stem: /^libcudnn_engines_runtime_compiled$/,
    facts: [{name: /^libnvrtc\.so\.\d+(?:\.\d+)?$/, role: () => ({what: 'NVRTC', when: 'when cuDNN first compiles an engine at run time', impact: 'feature', feature: 'runtime-compiled engines (fusions built with NVRTC)'})}],
  },
  {
    // PyTorch (the torch image: libtorch_cuda.so.2.6's strings "libnvrtc.so.", "libcuda.so.1",
    // "libtorch_cuda_linalg.so"; none is loaded by import or torch.cuda.is_available() there).
    // From PyTorch 2.6's sources, not a real run (each needs a GPU): LazyNVRTC loads NVRTC and
    // the driver at the first JIT-compiled kernel; the CUDA linear algebra library is loaded at the
    // first CUDA linalg call; CUPTI when the profiler starts.
    stem: /^(?:libtorch_cuda|libcaffe2_nvrtc|libtorch_cuda_linalg)$/,
    facts: [
      {name: /^libcuda\.so\.1$/, role: () => ({...DRIVER, when: 'at the first CUDA call (import torch still works)'})},
      {name: /^libnvrtc\.so\.\d+(?:\.\d+)?$/, role: () => ({what: 'NVRTC', when: 'at the first JIT-compiled kernel', impact: 'feature', feature: 'JIT-compiled kernels (fusion, torch.compile, jiterator)'})},
      {name: /^libcupti\.so\.\d+(?:\.\d+)?$/, role: () => ({what: 'CUPTI', when: 'when the profiler starts', impact: 'feature', feature: 'the profiler (torch.profiler, Kineto)'})},
      {name: /^libtorch_cuda_linalg\.so$/, role: () => ({what: 'PyTorch\'s CUDA linear algebra library', when: 'at the first linear algebra call on a CUDA tensor', impact: 'feature', feature: 'linear algebra on CUDA tensors (torch.linalg: cuSOLVER, MAGMA)'})},
    ],
  },
  {
    // c10_cuda's DriverAPI dlopens NVML for the caching allocator's expandable segments and memory
    // queries, and goes on without it (PyTorch 2.6's c10/cuda/driver_api.cpp; the torch image:
    // not loaded by import or torch.cuda.is_available()). Not a real run: it needs a GPU.
    stem: /^libc10_cuda$/,
    facts: [
      {name: /^libnvidia-ml\.so\.1$/, role: () => ({what: 'NVML, the driver\'s management library', when: 'when the CUDA caching allocator first needs the driver API (expandable segments, memory queries)', impact: 'optional', feature: 'NVML queries of the caching allocator'})},
      {name: /^libcuda\.so\.1$/, role: () => ({...DRIVER, when: 'when the CUDA caching allocator first needs the driver API'})},
    ],
  },
  {
    // NCCL 2.22.3 (Debian's libnccl2, trixie; the CUDA runtime linked in statically), from its sources
    // (src/misc/{cudawrap,nvmlwrap,ibvwrap,gdrwrap}.cc, src/plugin/net.cc) and, up to its first CUDA
    // call, a real run without a GPU (test/core/elf/runtime/corpus.test.ts, in a trixie root under the
    // dlopen spy): ncclGetUniqueId runs ncclInit, which dlopens "libgdrapi.so" only with
    // NCCL_GDRCOPY_ENABLE=1 and goes on without it; ncclCommInitAll dlopens "libcuda.so.1" (its cudart)
    // and fails at that first call (1, "unhandled cuda error": the driver's without the NVIDIA kernel
    // module, the stub, or none). NVML, verbs and the plugins come later in a communicator's
    // initialization, which needs a GPU: those stay from its sources. The network plugin's name is a
    // template ("libnccl-net-%s.so": %s is NCCL_NET_PLUGIN), reported as a declared-shape load and
    // never searched.
    stem: /^libnccl$/,
    facts: [
      {name: /^libcuda\.so\.1$/, role: () => ({...DRIVER, when: 'at the first communicator (ncclCommInitRank)'})},
      {name: /^libnvidia-ml\.so\.1$/, role: () => ({what: 'NVML, the driver\'s management library', when: 'at the first communicator (ncclCommInitRank): "Failed to open libnvidia-ml.so.1" and the communicator fails', impact: 'library'})},
      {name: /^libibverbs\.so(?:\.1)?$/, role: () => ({what: 'InfiniBand verbs (rdma-core)', when: 'at the first communicator (ncclCommInitRank): "Failed to open libibverbs.so[.1]" and NCCL uses sockets', impact: 'optional', feature: 'the InfiniBand/RoCE transport (NCCL falls back to TCP sockets)'})},
      {name: /^libgdrapi\.so$/, role: () => ({what: 'GDRCopy', when: 'at NCCL\'s initialization (ncclInit: the first ncclGetUniqueId or communicator), only with NCCL_GDRCOPY_ENABLE=1', impact: 'optional', feature: 'GDRCopy (NCCL_GDRCOPY_ENABLE)'})},
      {name: /^libnccl-(?:net|tuner)(?:-[^/]*)?\.so$/, role: (name) => ({what: name.includes('tuner') ? 'an NCCL tuner plugin' : 'an NCCL network plugin', when: 'at the first communicator (ncclCommInitRank)', impact: 'optional', feature: name.includes('tuner') ? 'a tuner plugin (NCCL_TUNER_PLUGIN)' : 'a network plugin (NCCL_NET_PLUGIN: InfiniBand, AWS EFA); NCCL uses its own sockets and IB transport without one'})},
    ],
  },
  {
    // StarPU 1.4 (Debian trixie's libstarpu-contrib-1.4-6: libstarpu-1.4.so.6, its strings name
    // "libnvidia-ml.so.1"): starpu_init dlopens libnvidia-ml.so.1 while it discovers the CUDA
    // devices, and goes on without it (test/core/elf/runtime/corpus.test.ts, in a trixie root
    // under the dlopen spy: with no NVML there, with and without the driver's libcuda,
    // starpu_init returns 0 and its CPU workers run).
    stem: /^libstarpu(?:-\d+(?:\.\d+)*)?$/,
    facts: [{name: /^libnvidia-ml\.so\.1$/, role: () => ({what: 'NVML, the driver\'s management library', when: 'at starpu_init, while it discovers the CUDA devices (failure ignored)', impact: 'optional', feature: 'NVML\'s view of the GPUs (StarPU goes on without it)'})}],
  },
  {
    // Any other object the CUDA runtime is linked into (cudart_static): libcuda.so.1 as libcudart
    // loads it, at the first CUDA call. A library nvcc built (test/commands/check-gpu.test.ts's
    // libk.so) holds "libcuda.so.1", imports dlopen and carries the runtime's messages.
    carries: STATIC_CUDART_MARKER,
    facts: [{name: /^libcuda\.so\.1$/, role: () => DRIVER}],
  },
];

/** libcudnn_cnn_infer.so.8 -> cnn_infer; libcudnn_graph.so.9 -> graph. */
function part(name: string): string {
  return name.replace(/^libcudnn_/, '').replace(/\.so\.\d+$/, '');
}

/** What a file is, whatever the version its name carries: libtorch_cuda.so.2.6 -> libtorch_cuda. */
export function stemOf(name: string): string {
  return name.replace(/\.so(?:\..*)?$/, '');
}

/**
 * Libraries of the CUDA stack, by the names code passes to dlopen (whole names, or the prefix a
 * library completes with its CUDA major: "libnvrtc.so."). An object whose strings name one of
 * these, and that imports dlopen, is a caller.
 */
const CUDA_STACK = /^lib(?:cuda|cudart|cudnn(?:_\w+)?|cublas(?:Lt)?|cufftw?|curand|cusparse(?:Lt)?|cusolver(?:Mg)?|nvrtc(?:-builtins)?|nvJitLink|nvjpeg|nvidia-(?:ml|ptxjitcompiler|nvvm)|nccl(?:-[\w%-]+)?|cupti|nvToolsExt|nvperf_\w+|npp\w*|nvinfer\w*|nvonnxparser|cufile\w*|cudla|nvptxcompiler\w*)\.so(?:\.\d+)*\.?$/;

export function isCudaStackName(name: string): boolean {
  return CUDA_STACK.test(name);
}

/** What a load is, from the name alone. */
function whatIs(name: string): string {
  if (name === 'libcuda.so.1') return DRIVER.what;
  if (name === 'libnvidia-ml.so.1') return 'NVML, the driver\'s management library';
  if (/^libnvrtc\.so/.test(name)) return 'NVRTC';
  if (/^libnvrtc-builtins\.so/.test(name)) return 'NVRTC\'s builtins';
  if (/^libnvJitLink\.so/.test(name)) return 'nvJitLink';
  if (/^libcupti\.so/.test(name)) return 'CUPTI';
  return name;
}

/**
 * The role of a load no fact covers: its file says it names the library and can call dlopen, not
 * when or what a failure costs, so a failure is a warning ('feature') that says so.
 */
export function defaultRole(name: string, caller: string): RuntimeLoadRole {
  return {what: whatIs(name), when: 'at run time (its file does not say when)', impact: 'feature', feature: `what ${caller} uses ${name} for (its file does not say which feature)`};
}

/** The distinctive strings CALLER_FACTS key facts by, looked for in every caller's constant data. */
export const FACT_MARKERS: readonly string[] = CALLER_FACTS.flatMap((c) => (c.carries ? [c.carries] : []));

/**
 * The role of `name` loaded by the object whose SONAME (or file name) is `caller` and whose
 * constant data carries `markers`: facts by stem first, then by what it carries, then the default.
 */
export function roleOf(name: string, caller: string, markers: readonly string[] = []): RuntimeLoadRole {
  const stem = stemOf(caller);
  const facts = [...CALLER_FACTS.filter((c) => c.stem?.test(stem)), ...CALLER_FACTS.filter((c) => c.carries !== undefined && markers.includes(c.carries))];
  for (const c of facts) {
    const fact = c.facts.find((f) => f.name.test(name));
    if (fact) return fact.role(name, caller);
  }
  return defaultRole(name, caller);
}

export {RUNTIME_ENV_VARIABLES, runtimeEnvOf, type RuntimeEnv} from './runtime-env.js';

/**
 * NCCL's network plugin (2.22.3, Debian's libnccl2; its src/plugin/net.cc): with NCCL_NET_PLUGIN
 * set to a non-empty value it dlopens that value as given, then "libnccl-net-VALUE.so" (its
 * strings: "NCCL_NET_PLUGIN", the template "libnccl-net-%s.so", "NET/Plugin: Plugin name set by env
 * to %s"); without it, "libnccl-net.so", a name its code builds from two 8-byte immediates
 * ("libnccl-" and "-net.so\0", movabs at 0x65ccb of libnccl.so.2.22.3), so no string holds it.
 * Which names it tries is the file's template completed with the environment the check is given.
 * Not seen in a real run: NCCL loads the plugin in a communicator's initialization, past its first CUDA
 * call, which needs a GPU (corpus.test.ts's run without one stops at that call).
 */
export function ncclNetPluginNames(template: string, env: RuntimeEnv): string[] | null {
  if (!/^libnccl-net-%s\.so$/.test(template)) return null;
  const value = env.NCCL_NET_PLUGIN;
  if (value === undefined || value === '') return ['libnccl-net.so'];
  return [value, template.replace('%s', value)];
}

/** The role of NCCL's network plugin: looked for and not needed without NCCL_NET_PLUGIN; the plugin asked for with it. */
export function ncclNetPluginRole(env: RuntimeEnv): RuntimeLoadRole {
  const value = env.NCCL_NET_PLUGIN;
  const when = 'at the first communicator (ncclCommInitRank)';
  if (value === undefined || value === '') {
    return {what: 'the default NCCL network plugin (libnccl-net.so)', when, impact: 'optional', feature: 'a network plugin (NCCL uses its own sockets and InfiniBand transport without one)'};
  }
  return {what: `the NCCL network plugin NCCL_NET_PLUGIN=${value} names`, when, impact: 'feature',
    feature: `the network plugin NCCL_NET_PLUGIN=${value} asks for (without it NCCL says "NET/Plugin: Could not find" and uses its own sockets and InfiniBand transport)`};
}

/**
 * Programs that load every plugin of a directory: what strings alone cannot say about them. The
 * caller is recognised by what its file does: it imports dlopen and a directory listing (opendir,
 * readdir, std::filesystem::directory_iterator), carries every string of `carries`, and its
 * bytes hold the plugins' name prefix (`prefixIn`: its constant strings, or its code, where the
 * compiler stores a short string as an immediate). Which directories it lists, which files it
 * takes and which plugin is the CUDA one are facts, each with the real run that showed it
 * (test/core/elf/runtime/plugin-dirs.test.ts repeats those runs).
 */
export interface PluginDirectoryFact {
  /** What the caller is, in words. */
  what: string;
  /** The strings it carries, the rarest first: only objects that carry the first are searched for the others. */
  carries: readonly string[];
  prefix: string;
  suffix: string;
  prefixIn: 'strings' | 'code';
  /** The variable naming its directories (or a plugin file), read from the environment the check is given. */
  env: (typeof RUNTIME_ENV_VARIABLES)[number];
  /**
   * The directories it lists, in order, and why each: from `env`, the constant strings of the file
   * (`strings`: those matching dirPattern), and the directory of the program (`programDir`).
   */
  directories(a: {env: RuntimeEnv; strings: readonly string[]; programDir: string}): Array<{dir: string; from: string; compiledIn?: true}>;
  /** Constant strings of the caller read for `directories` and `accepts` (null: none). */
  stringsPattern: RegExp | null;
  /** Whether a file of the directory (its name between prefix and suffix) is one it loads. */
  accepts(middle: string, strings: readonly string[]): boolean;
  /** A plugin file named on its own by `env` (GGML_BACKEND_PATH); false: `env` names directories. */
  envNamesFile: boolean;
  /** Which plugin is the CUDA one. */
  cuda: RegExp;
  role(file: string, cuda: boolean): RuntimeLoadRole;
}

const GGML_NAMES = /^(?:blas|zendnn|cann|cuda|hip|metal|rpc|sycl|vulkan|virtgpu|opencl|hexagon|musa|openvino|cpu|kompute|webgpu|zdnn)$/;

export const PLUGIN_DIRECTORIES: readonly PluginDirectoryFact[] = [
  {
    // ggml's backend registry (llama.cpp's libggml; node-llama-cpp 3.22.1 ships it as
    // libggml.cuda.v0.5.0.so): ggml_backend_load_all() lists the directory of the program
    // (readlink /proc/self/exe) and the working directory, and dlopens each regular file named
    // "libggml-NAME.so" or "libggml-NAME-VARIANT.so" for each backend NAME its strings list ("cuda",
    // "cpu", "vulkan"...); every CPU variant is opened for its score. GGML_BACKEND_PATH names one more
    // backend file. The prefix "libggml-" is an 8-byte immediate in its code (movabs), no string. A
    // backend that cannot be loaded is passed over ("failed to load", only in debug builds): without
    // libggml-cuda.so llama.cpp runs on the CPU. node-llama-cpp passes its own directory instead
    // (ggml_backend_load_all_from_path): the model takes the program's directory, and the
    // working directory is not modelled (a check would depend on where it runs).
    // Real runs: plugin-dirs.test.ts, a program calling ggml_backend_load_all() under the dlopen spy.
    what: 'ggml\'s backend registry (llama.cpp)',
    carries: ['GGML_BACKEND_PATH', 'ggml_backend_init'],
    prefix: 'libggml-',
    suffix: '.so',
    prefixIn: 'code',
    env: 'GGML_BACKEND_PATH',
    envNamesFile: true,
    stringsPattern: /[a-z]{3,9}/,
    directories: ({programDir}) => [{dir: programDir, from: 'the program\'s directory (ggml_backend_load_all)'}],
    accepts: (middle, strings) => {
      const name = middle.split('-', 1)[0]!;
      return GGML_NAMES.test(name) && strings.includes(name);
    },
    cuda: /^libggml-cuda(?:-[^/]*)?\.so$/,
    role: (file, cuda) => cuda
      ? {what: 'ggml\'s CUDA backend', when: 'when the program loads its backends (ggml_backend_load_all), before any model', impact: 'feature', feature: 'the CUDA backend: without it llama.cpp runs on the CPU'}
      : {what: `ggml's ${file.replace(/^libggml-|\.so$/g, '')} backend`, when: 'when the program loads its backends (ggml_backend_load_all), before any model', impact: 'feature', feature: `the ${file.replace(/^libggml-|\.so$/g, '').split('-', 1)[0]} backend of ggml`},
  },
  {
    // hwloc 2.12 (Debian trixie's libhwloc15): hwloc_topology_init() lists each directory of
    // HWLOC_PLUGINS_PATH (colon-separated), else the one compiled in ("/usr/lib/x86_64-linux-gnu/hwloc",
    // a string of the file), and dlopens each "hwloc_*.so" (its strings: "hwloc_", "%s.so",
    // "HWLOC_PLUGINS_PATH", "hwloc:  Looking under %s\n"). A plugin that cannot be loaded is passed
    // over (said only with HWLOC_PLUGINS_VERBOSE=1): without hwloc_cuda.so (libcudart.so.12) and
    // hwloc_nvml.so (libnvidia-ml.so.1, the driver's) the topology has no CUDA or NVML devices.
    // Real runs: plugin-dirs.test.ts, hwloc_topology_init/load in a trixie image under the dlopen spy.
    what: 'hwloc\'s plugin loader',
    carries: ['HWLOC_PLUGINS_PATH', 'hwloc_'],
    prefix: 'hwloc_',
    suffix: '.so',
    prefixIn: 'strings',
    env: 'HWLOC_PLUGINS_PATH',
    envNamesFile: false,
    stringsPattern: /\/[^\0]*\/hwloc/,
    directories: ({env, strings}) => {
      const set = env.HWLOC_PLUGINS_PATH;
      if (set !== undefined) return set.split(':').filter((d) => d.startsWith('/')).map((dir) => ({dir, from: 'HWLOC_PLUGINS_PATH'}));
      return strings.filter((s) => s.startsWith('/')).map((dir) => ({dir, from: 'the plugin directory compiled into it', compiledIn: true as const}));
    },
    accepts: () => true,
    cuda: /^hwloc_(?:cuda|nvml|opencl)\.so$/,
    role: (file, cuda) => {
      const name = file.replace(/^hwloc_|\.so$/g, '');
      return {what: `hwloc's ${name} plugin`, when: 'at hwloc_topology_init, when it loads its plugins', impact: 'feature',
        feature: cuda ? `${name === 'nvml' ? 'NVML' : name.toUpperCase()} devices in hwloc's topology (its ${file} plugin)` : `hwloc's ${name} plugin`};
    },
  },
];


/** An import that lists a directory: opendir and its kin, std::filesystem's directory iterators. */
export function listsDirectories(name: string): boolean {
  return /^(?:opendir|fdopendir|readdir|readdir64|scandir|scandir64|glob|glob64|nftw|nftw64)$/.test(name) || /^_ZNSt10filesystem\d*\w*(?:recursive_)?directory_iterator/.test(name);
}
