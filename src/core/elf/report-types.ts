/**
 * The public contract of the loader model (`cudaenv check`), used by switching, conda hooks,
 * `link` and `doctor`, and shared by every stage. The entries index.ts and api.ts export them.
 */
export type Via = 'rpath' | 'ld_library_path' | 'runpath' | 'ld.so.cache' | 'default' | 'loaded' | 'preload';

/**
 * 'loader-abort': ld.so stops on an internal assertion (glibc-version dependent, issue 12 item 2):
 * a version requirement whose vn_file names no loaded object (`needed != NULL`), or, before
 * glibc 2.41, a versioned reference reaching the library it names when that has no symbol versions.
 * 'cpu-isa-level': x86-64, glibc 2.33 and later: an object marked as needing an ISA level
 * (x86-64-v2, v3, v4) this CPU lacks; ld.so stops with "CPU ISA level is lower than required".
 * 'executable-stack': glibc 2.41 and later, --exe: the dlopen maps an object that asks for an
 * executable stack the process does not have; dlopen fails with "cannot enable executable stack
 * as shared object requires". Also, with GLIBC_TUNABLES=glibc.rtld.execstack=0, any object that
 * asks for one: the program ("Fatal glibc error: executable stack is not allowed") or a library.
 * 'noexec-mount': the loader stops at an object on a file system mounted noexec ("failed to map
 * segment from shared object"; a program there does not start at all).
 * 'static-tls': x86-64 and aarch64, --exe: the dlopen brings an object whose thread-local block is accessed
 * with the initial-exec model and does not fit in what is left of the static TLS block: dlopen
 * fails with "cannot allocate memory in static TLS block".
 */
export type ProblemKind = 'not-found' | 'noexec-mount' | 'executable-stack' | 'version-not-found' | 'loader-abort' | 'cpu-isa-level' | 'undefined-symbol' | 'unversioned-undefined-symbol' | 'static-tls'
  // What a library loads at run time (runtime/): the toolkit's stub instead of the driver's libcuda, a
  // libcuda of another release than the kernel module or too old for the toolkit, parts of two releases.
  | 'cuda-stub' | 'driver-mismatch' | 'driver-too-old' | 'mixed-release';

export interface NeededEdge {
  name: string;
  /** Null when the loader would not find it. */
  path: string | null;
  via: Via | null;
  /** The rule in words: "LD_LIBRARY_PATH entry /usr/local/cuda/lib64", "DT_RUNPATH entry $ORIGIN of /x/libfoo.so". */
  rule: string | null;
  /** Candidates the search passed over before this one (wrong ELF class or machine); absent when none. */
  passedOver?: Array<{path: string; reason: string}>;
  /** A DT_FILTER or DT_AUXILIARY entry rather than DT_NEEDED (ld.so puts the object before this one); absent for DT_NEEDED. */
  filter?: 'filter' | 'auxiliary';
  /**
   * The load stops at this entry: the loader's message. Its search picked a file the loader cannot
   * load (`path` null: "PATH: file too short"), or it mapped an object asking for an executable
   * stack the loader may not make ("NAME: cannot enable executable stack ..."). Absent otherwise.
   */
  error?: string;
  /** False on an entry the loader never gets to, having stopped before it (path, via, rule null); absent otherwise. */
  reached?: false;
  /** A library the object loads at run time with dlopen (runtime/), and when; absent for what ld.so loads at start. */
  dlopen?: {when: string; impact: 'library' | 'feature' | 'optional'};
  /** Set in `cudaenv check --json` only: 'dlopen' with `dlopen`, 'needed' otherwise. */
  edge?: 'needed' | 'dlopen';
  /** Set in `cudaenv check --json` only: the impact of the problem on this edge (the same as the problem's), else what a failure here would cost. */
  impact?: 'library' | 'feature';
}

export interface CheckedObject {
  path: string;
  /**
   * Under a sysroot, when `path` is a link of the image whose target is absolute (Debian's /etc/alternatives,
   * /lib -> /usr/lib), so that on the host it leads nowhere: the host path of the file it names in the image.
   */
  file?: string;
  soname: string | null;
  needed: NeededEdge[];
  /**
   * What the object loads with dlopen, in the shape of ELF dlopen metadata (`.note.dlopen`:
   * soname alternatives, feature, description, priority), from its own note ('note') or from
   * its strings and what cudaenv knows of the library ('strings'); absent when it loads nothing.
   * A `template` name ("libnccl-net-%s.so") depends on the environment and is not searched.
   */
  runtimeLoads?: RuntimeLoadEntry[];
}

export interface RuntimeLoadEntry {
  soname: string[];
  feature?: string;
  description: string;
  priority: 'required' | 'recommended' | 'suggested';
  source: 'note' | 'strings';
  template?: true;
  /** A plugin of a directory its caller lists: the directory, why it is listed, and whether it is the caller's CUDA plugin. */
  plugin?: {directory: string; from: string; cuda: boolean};
}

export interface Problem {
  kind: ProblemKind;
  /** The object whose requirement fails. */
  object: string;
  library: string | null;
  version: string | null;
  symbol: string | null;
  /** The file the loader would pick, with the rule, e.g. "LD_LIBRARY_PATH entry /usr/local/cuda/lib64". */
  chosen: string | null;
  /** A candidate the chosen file shadowed, and whether it would have satisfied the requirement. */
  shadowed: string | null;
  /**
   * With `exe`, for a symbol problem of an object the program starts with: 'start' when the
   * reference is bound while the program starts (a GOT or data relocation, `-z now`, LD_BIND_NOW),
   * so the program stops before its dlopen; 'first-call' when it is a PLT slot bound lazily, so the
   * program runs and fails only if it calls the symbol. Absent otherwise (bound when the library is
   * loaded, as `ldd -r` and a dlopen with RTLD_NOW do).
   */
  when?: 'start' | 'first-call';
  /**
   * For a library not found (and the symbols it would define) when the object is loaded on its
   * own: another checked file whose process loads the object and does find the library, and how
   * (a vendored library found through its loader's DT_RPATH). Absent otherwise.
   */
  foundWhenLoadedBy?: {object: string; path: string; rule: string};
  /**
   * 'dlopen': the problem is with a library loaded at run time (`loadedBy` loads it); absent for what
   * ld.so loads at start (DT_NEEDED, filters, preloads), which `cudaenv check --json` writes as 'needed'.
   */
  edge?: 'needed' | 'dlopen';
  loadedBy?: {object: string; when: string};
  /** For edge 'dlopen': 'library' when the loading library cannot work; 'feature' when only `feature` fails (failing only with `strict`). */
  impact?: 'library' | 'feature';
  feature?: string;
  /** Why, in words a user can act on. */
  explanation: string;
  /** The fix, a command where one exists. */
  fix: string | null;
  /** The problem in one line, without the fix (firstProblemLine adds it). */
  summary: string;
}

export interface CheckReport {
  /** False when something would fail to load (unversioned findings count only with `strict`). */
  ok: boolean;
  /** The libraries that were checked (the roots of `objects`), in order. */
  checked: string[];
  objects: CheckedObject[];
  problems: Problem[];
  /** Files passed over with the reason (linker scripts, non-ELF, wrong class). */
  skipped: Array<{path: string; reason: string}>;
  /** With GPUs to check for (`check --gpu`): whether each library carries code they run (issue 33). */
  gpu?: GpuReport;
}

export interface CheckOptions {
  /** Shared objects or directories (every ELF shared object in them). */
  targets: string[];
  /** LD_LIBRARY_PATH to assume; undefined means unset. */
  ldLibraryPath?: string;
  /** LD_PRELOAD entries. */
  preload?: string[];
  /** GLIBC_TUNABLES to assume (glibc.rtld.dynamic_sort orders the relocations); default: this process's. */
  glibcTunables?: string;
  /** An executable put first in the global scope (a Python interpreter for extension modules). */
  exe?: string;
  /**
   * LD_BIND_NOW to assume (with `exe`: the program binds its PLT slots while it starts instead of
   * at their first call); default: whether this process's LD_BIND_NOW is non-empty, as ld.so reads it.
   */
  bindNow?: boolean;
  /** Descend into subdirectories of directory targets. */
  recursive?: boolean;
  /** Count unversioned undefined symbols as failures. */
  strict?: boolean;
  /** Follow what libraries dlopen at run time (libcudart's libcuda.so.1, NVRTC's builtins, cuDNN's parts); default true. */
  runtimeLoads?: boolean;
  /**
   * The environment the program runs with, for what it changes of those loads (NCCL_NET_PLUGIN,
   * GGML_BACKEND_PATH, HWLOC_PLUGINS_PATH: runtime/families.ts RUNTIME_ENV_VARIABLES); default: the check's own.
   */
  runtimeEnv?: NodeJS.ProcessEnv;
  /** A root prepended to /etc/ld.so.cache and the default directories (tests, CUDAENV_SYSROOT). */
  sysroot?: string;
  /**
   * The page size of the kernel the libraries will run under (bytes, a power of two), which ld.so maps
   * segments in from glibc 2.35; default: this machine's (AT_PAGESZ). For libraries or an image
   * checked here for another machine, such as a 64 KB aarch64 kernel (Grace, GH200, RHEL on arm64).
   */
  pageSize?: number;
  /** An explicit ld.so.cache file (a private cache built with `ldconfig -C`). */
  cacheFile?: string;
  /** $CUDAENV_DIR/versions: fixes name the cudaenv version an LD_LIBRARY_PATH entry belongs to. */
  storeVersionsDir?: string;
  /** The directory relative search-path entries (empty elements) mean; default process.cwd(). */
  cwd?: string;
  /**
   * A directory for the persistent verdict cache ($CUDAENV_DIR/cache/check): each checked file's
   * result is reused while everything it depended on reads the same (./cache/verdict-cache.ts). Unset: no cache.
   */
  cacheDir?: string;
}

/**
 * What checking one listed file gives, before the files are merged into a CheckReport: the
 * per-file result the verdict cache stores (cache/verdict-cache.ts, in a compact form of these
 * same fields) and check-files.ts computes. One declaration, so the cache cannot drift from it.
 */
export interface FileVerdict {
  /** Set when the file is not checked. */
  skipped?: {path: string; reason: string};
  /** The checked object's path (the target, or the library --exe dlopens). */
  checked?: string;
  /** Every object of the modelled process, in load order. */
  objects: CheckedObject[];
  /** With --exe: how many of `objects` the program starts with (the rest come with the dlopen); absent: all. */
  startup?: number;
  problems: Problem[];
  /** "NAME: REASON" of each preload ld.so drops; one from /etc/ld.so.preload is prefixed with that path and a NUL. */
  failedPreloads: string[];
}

/** Whether a problem fails the check: unversioned references and a feature's loss only with `strict`. */
export function isFailing(problem: Pick<Problem, 'kind' | 'impact'>, strict: boolean): boolean {
  return strict || (problem.kind !== 'unversioned-undefined-symbol' && problem.impact !== 'feature');
}

/**
 * The GPU code one file carries (issue 33), as the device-code cache keeps it per file identity:
 * each fat binary (one CUDA module the runtime registers) reduced to the images it holds, nvcc's
 * names (`sm_90a` for SASS, `compute_90@8.4` for PTX with its PTX ISA version), and the fat
 * binaries that hold the same counted once.
 */
export interface DeviceCodeSummary {
  /**
   * Each distinct set of images with how many fat binaries carry exactly it; empty: no device code.
   * `notJudged`: whether these modules hold kernels could not be read, and why (a zstd-compressed
   * module on a Node.js without zstd): they are not said to fail where they carry no code for a GPU.
   */
  modules: Array<{images: string[]; count: number; notJudged?: string}>;
  /** Images of relocatable device code (`__nv_relfatbin`, `-rdc`), for a device link, never loaded. */
  relocatable: number;
  /**
   * Fat binaries whose cubins hold no kernel (the module nvcc adds to each shared library it links:
   * SASS, no PTX, no function): not in `modules`, since nothing in them is launched or can fail.
   */
  withoutKernels?: number;
  /** A damaged fat binary: what and where (what came before it is in `modules`). */
  problem?: string;
}

/** A GPU to check for: from `--gpu` or from the machine (nvidia-smi). */
export interface GpuTarget {
  /** Compute capability, "8.6". */
  capability: string;
  /** "sm_86". */
  name: string;
  /** "--gpu 8.6", "nvidia-smi: GPU 0, NVIDIA GeForce RTX 3090". */
  source: string;
}

/** Whether one library runs on one GPU, and by which code. */
export interface GpuVerdict {
  /** The GPU's compute capability. */
  gpu: string;
  /**
   * 'sass': every module has code built for it (or a compatible one); 'ptx': some module only
   * through the driver's JIT compiler; 'partial': some modules have nothing for it (their kernels
   * fail if launched there); 'none': no module has: `no kernel image is available for execution
   * on the device`; 'ptx-too-new': only PTX newer than the driver compiles (`the provided PTX was
   * compiled with an unsupported toolchain`); 'not-judged': the library loads its kernels by other
   * means (`note` says which).
   */
  runs: 'sass' | 'ptx' | 'partial' | 'none' | 'ptx-too-new' | 'not-judged';
  /** The best image used ("sm_80", "compute_90@8.4"), or null. */
  by: string | null;
  /** Modules (fat binaries) in the library, and how many have nothing for this GPU. */
  modules: number;
  modulesWithout: number;
  /** Modules with no code for this GPU whose kernels could not be read (not in `modulesWithout`): not judged, never a failure. */
  modulesNotJudged?: number;
  /** For code that runs only through PTX: the oldest driver that JIT-compiles it. */
  driverNeeded?: string;
  /** In words. */
  note: string;
}

export interface GpuLibrary {
  path: string;
  /** The distinct SASS architectures and PTX of all its modules ("sm_80", "compute_90@8.4"). */
  sass: string[];
  ptx: string[];
  modules: number;
  /** Modules without any kernel, not counted in `modules` (DeviceCodeSummary.withoutKernels). */
  modulesWithoutKernels?: number;
  /** A damaged fat binary (what could not be read). */
  problem?: string;
  verdicts: GpuVerdict[];
}

export interface GpuReport {
  gpus: GpuTarget[];
  /** The driver PTX is JIT-compiled by (this machine's), or null when unknown (a build host, `--gpu`). */
  driver: string | null;
  /** False when some library has no code any module of it runs on some GPU ('none', 'ptx-too-new'). */
  ok: boolean;
  /** Every checked or loaded object that carries device code, in the report's order. */
  libraries: GpuLibrary[];
  /** The failures, one line each with the fix: what `check` prints. */
  problems: Array<{path: string; gpu: string; summary: string; fix: string}>;
}
