import {existsSync} from 'node:fs';
import {join} from 'node:path';
import type {LdLibraryPathPolicy} from './toolkit-env.js';

/**
 * The switch the shell functions perform (_cudaenv_switch in shims/shell/posix.sh and
 * cudaenv.fish), as a pure function of the environment. `cudaenv use` uses it to run the
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

/** The environment after switching to `label` (or `system`); the input is not modified. */
export function planSwitch(
  input: NodeJS.ProcessEnv, storeRoot: string, label: string, policy: LdLibraryPathPolicy, mode: VersionMode,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {...input};
  if (!env._CUDAENV_PATH_SAVED) {
    for (const v of SWITCHED_VARS) env[`_CUDAENV_${v}_SAVED`] = input[v] === undefined ? 'u' : `x${input[v]}`;
  }
  const saved = (v: string) => env[`_CUDAENV_${v}_SAVED`] ?? 'u';
  const setList = (v: string, value: string) => {
    if (value === '' && saved(v) === 'u') delete env[v];
    else env[v] = value;
  };
  const restore = (v: string) => {
    const s = saved(v);
    if (s.startsWith('x')) env[v] = s.slice(1);
    else delete env[v];
  };
  const p = removeEntry(env.PATH ?? '', env._CUDAENV_PATH_ADDED ?? '');
  const l = removeEntry(env.LD_LIBRARY_PATH ?? '', env._CUDAENV_LD_LIBRARY_PATH_ADDED ?? '');
  if (label === 'system') {
    env._CUDAENV_PATH_ADDED = '';
    env._CUDAENV_LD_LIBRARY_PATH_ADDED = '';
    setList('PATH', p);
    setList('LD_LIBRARY_PATH', l);
    restore('CUDA_HOME');
    restore('CUDA_PATH');
  } else {
    const dir = join(storeRoot, 'versions', label);
    const lib = existsSync(join(dir, 'lib64')) ? join(dir, 'lib64') : join(dir, 'lib');
    env.PATH = prependEntry(p, join(dir, 'bin'));
    env._CUDAENV_PATH_ADDED = join(dir, 'bin');
    if (policy === 'none') {
      env._CUDAENV_LD_LIBRARY_PATH_ADDED = '';
      setList('LD_LIBRARY_PATH', l);
    } else {
      env.LD_LIBRARY_PATH = prependEntry(l, lib);
      env._CUDAENV_LD_LIBRARY_PATH_ADDED = lib;
    }
    env.CUDA_HOME = dir;
    env.CUDA_PATH = dir;
  }
  if (mode === 'pin') env.CUDAENV_VERSION = label;
  else if (mode === 'restore') restore('CUDAENV_VERSION');
  env._CUDAENV_APPLIED = label;
  return env;
}
