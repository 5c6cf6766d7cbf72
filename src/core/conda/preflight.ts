import {join} from 'node:path';
import {toolkitEnvironment} from '../shell/toolkit-env.js';
import {firstOnPath, pythonCudaLibDirs, sitePackagesUnder} from '../system/python-env.js';
import {isFailing, type Problem} from '../elf/api.js';
import {isDir} from '../fs-kind.js';

export interface HookCheck {
  /** Directories checked: the environment's lib/, torch/lib and nvidia/*\/lib of its site-packages. */
  targets: string[];
  /** The LD_LIBRARY_PATH modelled: what the hook produces from the caller's. */
  ldLibraryPath: string | null;
  /** Problems the hook would cause (present with the hook, absent without it). */
  problems: Problem[];
  /** Problems that exist with or without the hook (reported, never a reason to refuse). */
  existing: Problem[];
  /**
   * The environment's interpreter the wheels' libraries were checked as loaded by (dlopen: static
   * TLS, executable stacks), or null: no interpreter binary in the environment, so `ldd -r`'s model.
   */
  interpreter: string | null;
}

const key = (p: Problem) => [p.kind, p.object, p.library, p.version, p.symbol].join('\0');

/**
 * Runs the check engine on the environment's libraries twice: under the LD_LIBRARY_PATH the
 * hook would produce and under the one without it. Only what the hook adds counts against it.
 * The engine is imported lazily: it is large, and only `install` with `prepend` needs it.
 */
export async function checkHook(options: {
  prefix: string;
  toolkit: string;
  storeVersionsDir: string;
  env?: NodeJS.ProcessEnv;
}): Promise<HookCheck> {
  const env = options.env ?? process.env;
  // The environment's lib/, torch/lib and nvidia/*/lib of its site-packages.
  const lib = join(options.prefix, 'lib');
  const plain = isDir(lib) ? [lib] : [];
  const wheels = pythonCudaLibDirs(sitePackagesUnder(options.prefix));
  const targets = [...plain, ...wheels];
  const withHook = toolkitEnvironment(env, options.toolkit, options.storeVersionsDir, 'prepend').LD_LIBRARY_PATH;
  // The hook prepends to what the shell has; entries of other cudaenv versions would be
  // there only through `cudaenv use`, which the model leaves out in both runs.
  const without = toolkitEnvironment(env, undefined, options.storeVersionsDir, 'none').LD_LIBRARY_PATH;
  if (targets.length === 0) return {targets, ldLibraryPath: withHook ?? null, problems: [], existing: [], interpreter: null};
  const {checkWithWheels, dynamicProgram, loaderVariables} = await import('../elf/api.js');
  // The environment's lib/ serves any program: checked as `ldd -r` loads it. Its Python dlopens the
  // wheels' libraries: checked as that interpreter does, as after any other switch (switch-check.ts),
  // so a library the hook's LD_LIBRARY_PATH picks is refused for what only a dlopen meets (its
  // initial-exec TLS past the static TLS surplus, an executable stack on glibc 2.41).
  const python = firstOnPath(['python3', 'python'], join(options.prefix, 'bin'));
  const interpreter = python ? dynamicProgram(python) : null;
  // The rest of the loader's environment (LD_PRELOAD, GLIBC_TUNABLES, LD_BIND_NOW) is the shell's, as
  // for the check after a switch: the hook changes only LD_LIBRARY_PATH.
  const run = (ldLibraryPath: string | undefined) => checkWithWheels(
    {targets: plain, storeVersionsDir: options.storeVersionsDir, ldLibraryPath, ...loaderVariables(env)},
    {targets: wheels, ...(interpreter ? {exe: interpreter} : {})},
  );
  const [hooked, baseline] = await Promise.all([run(withHook), run(without)]);
  const before = new Set(baseline.problems.filter(failing).map(key));
  const failingWithHook = hooked.problems.filter(failing);
  return {
    targets,
    ldLibraryPath: withHook ?? null,
    problems: failingWithHook.filter((p) => !before.has(key(p))),
    existing: failingWithHook.filter((p) => before.has(key(p))),
    interpreter,
  };
}

/** What fails `check` fails the hook: not unversioned undefined symbols (left to the loading program), nor a feature's loss. */
function failing(p: Problem): boolean {
  return isFailing(p, false);
}
