/**
 * Names shared by the hook scripts and the code that installs and reads them.
 *
 * conda and micromamba source `etc/conda/activate.d/*` in ascending byte order and
 * `deactivate.d/*` in descending order. `~` is the highest printable ASCII character and
 * conda-forge already uses one (`~cuda-nvcc_activate.sh`) to run last, so `~~cudaenv` sorts
 * after every package's script: cudaenv's activate runs last and its deactivate first.
 */
export const HOOK_BASENAME = '~~cudaenv';

export type HookShell = 'sh' | 'fish' | 'csh';
export const HOOK_SHELLS: readonly HookShell[] = ['sh', 'fish', 'csh'];

/** The file names conda and micromamba pick per shell family: `.sh` (bash, zsh, dash), `.fish`, `.csh`. */
export function hookFileName(shell: HookShell): string {
  return `${HOOK_BASENAME}.${shell}`;
}

/** The first line every generated script carries after the comment header, with what `status` reads. */
export const HOOK_MARKER = '# cudaenv-conda-hook: ';

/**
 * Environment variables the scripts keep between activation and deactivation. Exported,
 * so a subshell of an activated shell can still deactivate correctly. The conda layer is
 * one of two that may each want a version; the shell integration (shims/shell/posix.sh,
 * cudaenv.fish) is the other, and both keep one shared state: the values before the first
 * layer opened, and the entries on PATH and LD_LIBRARY_PATH now. Only one version is ever on
 * the variables, whole: the shell's when CUDAENV_VERSION is set (`cudaenv use`), else the
 * conda hook's, else the shell's auto-switched one (the order `cudaenv current` uses).
 */
export const VARS = {
  /** The conda layer: the toolkit's bin, set while an environment with a hook is active (select.ts reads it). */
  pathAdded: '_CUDAENV_CONDA_PATH_ADDED',
  /** The conda layer's lib entry ('' under the `none` policy). */
  ldAdded: '_CUDAENV_CONDA_LD_ADDED',
} as const;

/** The shell layer (read here, written by the shell integration only). */
export const SHELL_LAYER = {applied: '_CUDAENV_APPLIED', home: '_CUDAENV_SHELL_HOME', lib: '_CUDAENV_SHELL_LIB'} as const;

/** The variables whose values before the first layer opened are saved (`_CUDAENV_<VAR>_SAVED`: `x<value>` or `u`). */
export const SAVED_VARS = ['PATH', 'LD_LIBRARY_PATH', 'CUDA_HOME', 'CUDA_PATH', 'CUDAENV_VERSION'] as const;

/** The shared state: the saved values and the entries on PATH / LD_LIBRARY_PATH now ('' for none). */
export const SHARED_STATE = [...SAVED_VARS.map((v) => `_CUDAENV_${v}_SAVED`), '_CUDAENV_PATH_ADDED', '_CUDAENV_LD_LIBRARY_PATH_ADDED'] as const;

export interface HookInfo {
  /** The version label the hook activates. */
  version: string;
  /** The version directory in the store (versions/<label>). */
  toolkit: string;
  ldLibraryPath: 'prepend' | 'none';
}
