import {statSync} from 'node:fs';
import {join} from 'node:path';
import {toolkitEnvironment} from '../shell/toolkit-env.js';
import {pythonCudaLibDirs, sitePackagesUnder} from '../system/python-env.js';
import type {Problem} from '../elf/api.js';

export interface HookCheck {
  /** Directories checked: the environment's lib/, torch/lib and nvidia/*\/lib of its site-packages. */
  targets: string[];
  /** The LD_LIBRARY_PATH modelled: what the hook produces from the caller's. */
  ldLibraryPath: string | null;
  /** Problems the hook would cause (present with the hook, absent without it). */
  problems: Problem[];
  /** Problems that exist with or without the hook (reported, never a reason to refuse). */
  existing: Problem[];
}

/** The environment's CUDA library directories the loader model looks at. */
export function environmentLibDirs(prefix: string): string[] {
  const dirs: string[] = [];
  const lib = join(prefix, 'lib');
  try {
    if (statSync(lib).isDirectory()) dirs.push(lib);
  } catch {
    // an environment without lib/
  }
  return [...dirs, ...pythonCudaLibDirs(sitePackagesUnder(prefix))];
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
  const targets = environmentLibDirs(options.prefix);
  const withHook = toolkitEnvironment(env, options.toolkit, options.storeVersionsDir, 'prepend').LD_LIBRARY_PATH;
  // The hook prepends to what the shell has; entries of other cudaenv versions would be
  // there only through `cudaenv use`, which the model leaves out in both runs.
  const without = toolkitEnvironment(env, undefined, options.storeVersionsDir, 'none').LD_LIBRARY_PATH;
  if (targets.length === 0) return {targets, ldLibraryPath: withHook ?? null, problems: [], existing: []};
  const {checkLibraries} = await import('../elf/index.js');
  const common = {targets, storeVersionsDir: options.storeVersionsDir};
  const [hooked, baseline] = await Promise.all([
    checkLibraries({...common, ldLibraryPath: withHook}),
    checkLibraries({...common, ldLibraryPath: without}),
  ]);
  const before = new Set(baseline.problems.filter(failing).map(key));
  const failingWithHook = hooked.problems.filter(failing);
  return {
    targets,
    ldLibraryPath: withHook ?? null,
    problems: failingWithHook.filter((p) => !before.has(key(p))),
    existing: failingWithHook.filter((p) => before.has(key(p))),
  };
}

/** Unversioned undefined symbols are left to the loading program (not failures, as in `check`). */
function failing(p: Problem): boolean {
  return p.kind !== 'unversioned-undefined-symbol';
}
