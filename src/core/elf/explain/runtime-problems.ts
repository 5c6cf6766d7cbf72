import {realpathSync} from 'node:fs';
import {basename, dirname} from 'node:path';
import type {Problem} from '../report-types.js';
import type {Edge, LoaderProcess} from '../search/loader-process.js';
import {kernelDriverVersion, nvidiaModuleLoaded} from '../read/machine/nvidia-driver.js';
import {describeLoad, type RuntimeLoad} from '../runtime/runtime-loads.js';
import type {ReleaseCheck} from '../runtime/release-checks.js';
import {cacheEntryFix, DRIVER_ONLY, dropEntryFix, explain, howPicked, ruleOf, type ExplainContext} from './explain-finding.js';

/**
 * The problems of what libraries load at run time, worded like every other problem (what fails,
 * the entry that supplies the wrong file, one fix) and marked with the load: edge 'dlopen', the
 * library that loads it and when, and whether the library cannot work or only a feature fails.
 */
export async function explainRuntimeLoads(loads: RuntimeLoad[], ctx: ExplainContext, sysroot: string): Promise<Problem[]> {
  const problems: Problem[] = [];
  for (const load of loads) {
    const mark = (problem: Problem, impact = load.role.impact): Problem => ({
      ...problem,
      edge: 'dlopen',
      loadedBy: {object: load.caller.path, when: load.role.when},
      impact: impact === 'library' ? 'library' : 'feature',
      ...(impact !== 'library' && load.role.feature ? {feature: load.role.feature} : {}),
    });
    const how = describeLoad(load);
    for (const f of load.findings) {
      const problem = await explain(load.process, f, ctx);
      if (f.kind === 'not-found' && f.edge === load.edge && !load.edge.errorPath) {
        problems.push(notFound(problem, load, how, sysroot, mark));
        continue;
      }
      problem.explanation = `${how}. ${problem.explanation}${consequence(load)}`;
      problems.push(mark(problem));
    }
    // A libcuda the loaded file depends on (not the one loaded) costs what the load costs: the
    // plugin's CUDA, which its program goes on without (ggml falls back to the CPU).
    for (const check of load.checks) {
      const impact = check.kind === 'mixed-release' || check.object !== load.edge.object ? load.role.impact : 'library';
      problems.push(mark(explainCheck(check, load, how, ctx, sysroot), impact));
    }
  }
  return problems;
}

/** What the failure costs: the library, or only a feature. */
function consequence(load: RuntimeLoad): string {
  const caller = basename(load.caller.path);
  return load.role.impact === 'library'
    ? ` Without it ${caller} cannot work: the call that loads it fails.`
    : ` Only ${load.role.feature ?? 'the feature that needs it'} fails; the rest of ${caller} works.`;
}

function notFound(problem: Problem, load: RuntimeLoad, how: string, sysroot: string, mark: (p: Problem, impact?: RuntimeLoad['role']['impact']) => Problem): Problem {
  const caller = basename(load.caller.path);
  const searched = `the search dlopen makes from ${load.caller.path} (its DT_RUNPATH, or the DT_RPATH of it and what loaded it; LD_LIBRARY_PATH; ld.so.cache; the system directories)`;
  if (load.name === 'libcuda.so.1') {
    const kernel = kernelDriverVersion(sysroot);
    const driverOnly = DRIVER_ONLY;
    if (!nvidiaModuleLoaded(sysroot)) {
      problem.summary = `${how}, and this machine has no NVIDIA driver to provide it`;
      problem.explanation = `${driverOnly} Nothing on ${searched} is one, and no NVIDIA kernel module is loaded (no /proc/driver/nvidia/version, no /sys/module/nvidia). ` +
        `Loading works; every CUDA call here fails with cudaErrorInsufficientDriver ("CUDA driver version is insufficient for CUDA runtime version"). Fine on a build host.`;
      problem.fix = 'run it on a machine with the NVIDIA driver (`nvidia-smi` there shows it), or install the driver here';
      // A warning (failing only with --strict), as the edge says (runtime/runtime-loads.ts noDriverRole).
      return mark(problem, load.role.impact);
    }
    const module = kernel ?? '(its version unread: /sys/module/nvidia)';
    problem.summary = `${how}, and the loader cannot find the libcuda.so.1 of the driver ${module} this machine runs`;
    problem.explanation = `${driverOnly} The kernel module ${module} is loaded, but no libcuda.so.1 is on ${searched}. ` +
      `Every CUDA call fails with cudaErrorInsufficientDriver.`;
    problem.fix = kernel
      ? `install the driver's user-space libraries of ${kernel} (the libcuda1/nvidia-driver package of that version), or add the directory that holds libcuda.so.${kernel} to /etc/ld.so.conf.d/ and run \`ldconfig\``
      : 'install the user-space libraries of the driver this machine runs (`modinfo nvidia` names its version), or add the directory that holds its libcuda.so.1 to /etc/ld.so.conf.d/ and run `ldconfig`';
    return mark(problem, 'library');
  }
  problem.summary = `${how}, and the loader cannot find it`;
  problem.explanation = `${load.caller.path} loads ${load.name} with dlopen ${load.role.when}; nothing on ${searched} holds it.${consequence(load)}`;
  if (problem.fix?.startsWith('install the package that provides')) {
    problem.fix = `install ${load.role.what} from the same release as ${caller}, or add the directory that holds ${load.name} to LD_LIBRARY_PATH`;
  }
  return mark(problem);
}

/** The one thing to change so the load no longer brings `path`: the entry that brought it. */
function fixForEntry(found: Edge, path: string, ctx: ExplainContext, sysroot: string, instead: string, p?: LoaderProcess): string {
  // Already loaded by another object: what brought it there is what to change.
  const edge = found.via === 'loaded' && found.object && p ? p.edgeTo(found.object) ?? found : found;
  // Already loaded: the preload that brought it (the file itself is the toolkit's or a package's, not to be deleted).
  if (edge.preloadFrom === 'LD_PRELOAD') return `take ${edge.preloadName ?? path} out of LD_PRELOAD (\`unset LD_PRELOAD\` if it is the only entry), so that ${instead}`;
  if (edge.preloadFrom) return `take ${edge.preloadName ?? path} out of ${edge.preloadFrom} (as root), so that ${instead}`;
  if (edge.ldEntry !== undefined) return `${dropEntryFix(edge.ldEntry, ctx)}, so that ${instead}`;
  if (edge.via === 'ld.so.cache') return `${cacheEntryFix(path, sysroot)}, so that ${instead}`;
  if (edge.via === 'rpath' || edge.via === 'runpath') return `remove ${dirname(path)} from the ${edge.via === 'rpath' ? 'DT_RPATH' : 'DT_RUNPATH'} named in "${edge.rule}" (\`patchelf --set-rpath\`), so that ${instead}`;
  return `remove ${path}, so that ${instead}`;
}

function explainCheck(check: ReleaseCheck, load: RuntimeLoad, how: string, ctx: ExplainContext, sysroot: string): Problem {
  const path = check.object.path;
  const base: Problem = {kind: check.kind, object: load.caller.path, library: load.name, version: null, symbol: null,
    chosen: `${path} (${ruleOf(load.edge, path)})`, shadowed: null, explanation: '', fix: null, summary: ''};
  switch (check.kind) {
    case 'cuda-stub':
      base.summary = `${how} and gets the CUDA toolkit's stub ${path}: every CUDA call fails with "CUDA driver is a stub library"`;
      base.explanation = `${how}. ${howPicked(load.edge, path)}. ${check.detail}: it exists only for linking, and every entry point returns ` +
        'CUDA_ERROR_STUB_LIBRARY, so the first CUDA call fails with cudaErrorStubLibrary ("CUDA driver is a stub library").';
      base.fix = fixForEntry(load.edge, path, ctx, sysroot, 'the driver\'s libcuda.so.1 is found', load.process);
      return base;
    case 'driver-mismatch':
      base.summary = `${how} and gets a libcuda that does not match the kernel module: CUDA calls fail with "system has unsupported display driver / cuda driver combination"`;
      base.explanation = `${how}. ${howPicked(load.edge, path)}. ${check.detail}; CUDA then fails with cudaErrorSystemDriverMismatch.`;
      base.fix = fixForEntry(load.edge, path, ctx, sysroot, 'the libcuda of the running driver is found', load.process);
      return base;
    case 'driver-too-old':
      base.summary = `${how} and gets a libcuda too old for it: CUDA calls fail with cudaErrorInsufficientDriver`;
      base.explanation = `${how}. ${howPicked(load.edge, path)}. ${check.detail}.`;
      base.fix = 'upgrade the NVIDIA driver, or use a CUDA release this driver supports (`cudaenv doctor` names them)';
      return base;
    case 'mixed-release': {
      const [a, b] = check.sides ?? [];
      base.summary = `${how}, and gets ${basename(path)} of another release: ${a ? `${basename(a.path)} is ${a.version} (${dirname(a.path)})` : ''}${b ? `, ${basename(b.path)} is ${b.version} (${dirname(b.path)})` : ''}`;
      const builtins = /^libnvrtc-builtins\.so\./.test(load.name);
      // The dlopen works (the file has the name asked for); what fails is NVRTC's use of it, as the real run shows.
      base.explanation = `${how}. ${howPicked(load.edge, path)}. ${check.detail}.${builtins
        ? ` The dlopen itself works (the file bears the name NVRTC asks for), but NVRTC finds none of its own release's entry points in it: nvrtcCompileProgram returns NVRTC_ERROR_BUILTIN_OPERATION_FAILURE (7), so every run-time compilation fails (PyTorch's jiterator and fusions, CuPy's kernels); the rest of ${basename(load.caller.path)} loads and works.`
        : consequence(load)}`;
      if (builtins) base.summary += ': nvrtcCompileProgram returns NVRTC_ERROR_BUILTIN_OPERATION_FAILURE';
      // A part beside its caller is the installation's own file: replace it with its release's (relinking NVIDIA's library changes nothing).
      base.fix = besideCaller(load, path)
        ? `install ${load.name} of ${a ? `release ${a.version}` : 'the same release'} (that of ${basename(load.caller.path)}) in ${dirname(path)} in place of the ${b?.version ?? 'other'} one there: reinstall the package or wheel both came from (Debian's ${builtins ? 'libnvrtc-builtins' : 'libcudnn'} of that version, pip's ${builtins ? 'nvidia-cuda-nvrtc-cuXX' : 'nvidia-cudnn-cuXX'} of the same version)`
        : fixForEntry(load.edge, path, ctx, sysroot, `${load.name} of the same release as ${basename(load.caller.path)} is found`, load.process);
      return base;
    }
  }
}

/** Whether the loaded part lies in its caller's directory (by the names the loader used, or their real directories). */
function besideCaller(load: RuntimeLoad, path: string): boolean {
  if (dirname(path) === dirname(load.caller.path)) return true;
  const real = (f: string) => {
    try {
      return dirname(realpathSync.native(load.process.ctx.view.hostPath(f) ?? f));
    } catch {
      return null;
    }
  };
  const a = real(path);
  return a !== null && a === real(load.caller.path);
}

/**
 * A libcuda.so.1 loaded at the start (runtime/release-checks.ts startLibcudaChecks): the stub, or
 * another release than the kernel module, worded as for a dlopen's, the fix at the entry that brought it.
 */
export function explainStartLibcuda(p: LoaderProcess, checks: ReleaseCheck[], ctx: ExplainContext, sysroot: string): Problem[] {
  return checks.map((check) => {
    const path = check.object.path;
    const edge = p.edgeTo(check.object);
    const owner = edge?.owner.path ?? p.target.path;
    const how = edge?.preloadFrom ? `${edge.preloadFrom} brings libcuda.so.1 at the start` : `${owner} needs libcuda.so.1 (DT_NEEDED)`;
    const picked = edge ? howPicked(edge, path) : `The loader finds ${path}`;
    const base: Problem = {kind: check.kind, object: owner, library: 'libcuda.so.1', version: null, symbol: null,
      chosen: `${path} (${edge ? ruleOf(edge, path) : 'already loaded'})`, shadowed: null, explanation: '', fix: null, summary: '', impact: 'library'};
    if (check.kind === 'cuda-stub') {
      base.summary = `${how} and gets the CUDA toolkit's stub ${path}: every CUDA call fails with "CUDA driver is a stub library"`;
      base.explanation = `${how}. ${picked}. ${check.detail}: it exists only for linking, and every entry point returns ` +
        'CUDA_ERROR_STUB_LIBRARY, so the first CUDA call fails with cudaErrorStubLibrary ("CUDA driver is a stub library").';
      base.fix = edge ? fixForEntry(edge, path, ctx, sysroot, 'the driver\'s libcuda.so.1 is found', p) : null;
    } else {
      base.summary = `${how} and gets a libcuda that does not match the kernel module: CUDA calls fail with "system has unsupported display driver / cuda driver combination"`;
      base.explanation = `${how}. ${picked}. ${check.detail}; CUDA then fails with cudaErrorSystemDriverMismatch.`;
      base.fix = edge ? fixForEntry(edge, path, ctx, sysroot, 'the libcuda of the running driver is found', p) : null;
    }
    return base;
  });
}

/** Pairs one release ships together, loaded at start from two releases (runtime/release-checks.ts pinnedPairs). */
export function explainPinnedPairs(p: LoaderProcess, checks: ReleaseCheck[], ctx: ExplainContext, sysroot: string): Problem[] {
  return checks.map((check) => {
    const [a, b] = check.sides ?? [];
    const edge = p.edgeTo(check.object);
    const how = edge?.rule ?? 'a name already loaded';
    return {kind: check.kind, object: a?.path ?? check.object.path, library: check.object.info.soname, version: null, symbol: null,
      chosen: `${check.object.path} (${how})`, shadowed: null,
      summary: `${a ? `${basename(a.path)} is ${a.version} (${dirname(a.path)})` : ''}${b ? ` and ${basename(b.path)} is ${b.version} (${dirname(b.path)})` : ''}: one release ships them together`,
      explanation: `${edge ? `${howPicked(edge, check.object.path)}.` : `The loader finds ${check.object.path} by ${how}.`} ${check.detail}; the pair from two releases fails with undefined symbols or wrong results at the first call that crosses them.`,
      fix: edge ? fixForEntry(edge, check.object.path, ctx, sysroot, `the ${basename(check.object.path)} of the same release as ${a ? basename(a.path) : 'its pair'} is found`, p) : null};
  });
}
