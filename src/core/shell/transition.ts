import {existsSync} from 'node:fs';
import {join} from 'node:path';
import type {LdLibraryPathPolicy} from './toolkit-env.js';

/**
 * The switch the shell functions perform (_cudaenv_switch in shims/shell/posix.sh and
 * cudaenv.fish), as a pure function of the environment, with the conda hook's layer as the
 * shells see it (see the state described at the top of posix.sh). `cudaenv use` uses it to run the
 * check under the LD_LIBRARY_PATH the shell is about to get; tests compare it with the shells.
 */
export const SWITCHED_VARS = ['PATH', 'LD_LIBRARY_PATH', 'CUDA_HOME', 'CUDA_PATH', 'CUDAENV_VERSION'] as const;
export type VersionMode = 'pin' | 'restore' | 'keep';

/** Removes the first occurrence of `entry` from a colon list (same cases as _cudaenv_rm_entry). */
export function removeEntry(value: string, entry: string): string {
  if (entry === '') return value;
  if (value === entry) return '';
  if (value.startsWith(`${entry}:`)) return value.slice(entry.length + 1);
  const mid = value.indexOf(`:${entry}:`);
  if (mid >= 0) return `${value.slice(0, mid)}:${value.slice(mid + entry.length + 2)}`;
  if (value.endsWith(`:${entry}`)) return value.slice(0, value.length - entry.length - 1);
  return value;
}

export function prependEntry(value: string, entry: string): string {
  return value === '' ? entry : `${entry}:${value}`;
}

const saved = (v: string) => `_CUDAENV_${v}_SAVED`;
/** cudaenv's state variables, shared with the conda hook scripts (src/core/conda/names.ts), and the shell layer's. */
export const STATE_VARS = [
  ...SWITCHED_VARS.map(saved), '_CUDAENV_PATH_ADDED', '_CUDAENV_LD_LIBRARY_PATH_ADDED',
  '_CUDAENV_APPLIED', '_CUDAENV_SHELL_HOME', '_CUDAENV_SHELL_LIB',
] as const;

/**
 * The layer whose version the variables carry (_cudaenv_effective): the shell's when
 * CUDAENV_VERSION is set or no conda hook is active, else the conda hook's. home '' is none.
 */
export function effectiveLayer(env: NodeJS.ProcessEnv): {home: string; lib: string} {
  if (env._CUDAENV_APPLIED && (env.CUDAENV_VERSION || !env._CUDAENV_CONDA_PATH_ADDED)) {
    return {home: env._CUDAENV_SHELL_HOME ?? '', lib: env._CUDAENV_SHELL_LIB ?? ''};
  }
  const bin = env._CUDAENV_CONDA_PATH_ADDED;
  if (bin) return {home: bin.endsWith('/bin') ? bin.slice(0, -4) : bin, lib: env._CUDAENV_CONDA_LD_ADDED ?? ''};
  return {home: '', lib: ''};
}

/** _cudaenv_apply: the effective layer's version on the variables (modifies env). */
function apply(env: NodeJS.ProcessEnv): void {
  const {home, lib} = effectiveLayer(env);
  if (!env._CUDAENV_PATH_SAVED) {
    if (home === '') return;
    for (const v of SWITCHED_VARS) env[saved(v)] = env[v] === undefined ? 'u' : `x${env[v]}`;
  }
  const setList = (v: string, value: string) => {
    if (value === '' && (env[saved(v)] ?? 'u') === 'u') delete env[v];
    else env[v] = value;
  };
  const p = removeEntry(env.PATH ?? '', env._CUDAENV_PATH_ADDED ?? '');
  const l = removeEntry(env.LD_LIBRARY_PATH ?? '', env._CUDAENV_LD_LIBRARY_PATH_ADDED ?? '');
  if (home !== '') {
    env.PATH = prependEntry(p, join(home, 'bin'));
    env._CUDAENV_PATH_ADDED = join(home, 'bin');
    env._CUDAENV_LD_LIBRARY_PATH_ADDED = lib;
    if (lib !== '') env.LD_LIBRARY_PATH = prependEntry(l, lib);
    else setList('LD_LIBRARY_PATH', l);
    env.CUDA_HOME = home;
    env.CUDA_PATH = home;
  } else {
    env._CUDAENV_PATH_ADDED = '';
    env._CUDAENV_LD_LIBRARY_PATH_ADDED = '';
    setList('PATH', p);
    setList('LD_LIBRARY_PATH', l);
    restore(env, 'CUDA_HOME');
    restore(env, 'CUDA_PATH');
  }
  if (!env._CUDAENV_APPLIED && !env._CUDAENV_CONDA_PATH_ADDED) {
    for (const v of [...SWITCHED_VARS.map(saved), '_CUDAENV_PATH_ADDED', '_CUDAENV_LD_LIBRARY_PATH_ADDED']) delete env[v];
  }
}

function restore(env: NodeJS.ProcessEnv, v: string): void {
  const s = env[saved(v)] ?? 'u';
  if (s.startsWith('x')) env[v] = s.slice(1);
  else delete env[v];
}

/** The environment after switching the shell layer to `label` (or `system`); the input is not modified. */
export function planSwitch(
  input: NodeJS.ProcessEnv, storeRoot: string, label: string, policy: LdLibraryPathPolicy, mode: VersionMode,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {...input};
  if (!env._CUDAENV_PATH_SAVED) {
    for (const v of SWITCHED_VARS) env[saved(v)] = input[v] === undefined ? 'u' : `x${input[v]}`;
  }
  if (label === 'system') {
    env._CUDAENV_SHELL_HOME = '';
    env._CUDAENV_SHELL_LIB = '';
  } else {
    const dir = join(storeRoot, 'versions', label);
    env._CUDAENV_SHELL_HOME = dir;
    env._CUDAENV_SHELL_LIB = policy === 'none' ? '' : existsSync(join(dir, 'lib64')) ? join(dir, 'lib64') : join(dir, 'lib');
  }
  if (mode === 'pin') env.CUDAENV_VERSION = label;
  else if (mode === 'restore') restore(env, 'CUDAENV_VERSION');
  env._CUDAENV_APPLIED = label;
  apply(env);
  return env;
}

/** The environment after `cudaenv deactivate` (_cudaenv_deactivate); the input is not modified. */
export function planDeactivate(input: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {...input};
  if (!env._CUDAENV_APPLIED) return env;
  restore(env, 'CUDAENV_VERSION');
  delete env._CUDAENV_APPLIED;
  delete env._CUDAENV_SHELL_HOME;
  delete env._CUDAENV_SHELL_LIB;
  apply(env);
  return env;
}
