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
 * so a subshell of an activated shell can still deactivate correctly.
 */
export const VARS = {
  /** Set once the originals are saved; a second activation without deactivation keeps them. */
  saved: '_CUDAENV_CONDA_SAVED',
  oldCudaHome: '_CUDAENV_CONDA_OLD_CUDA_HOME',
  oldCudaPath: '_CUDAENV_CONDA_OLD_CUDA_PATH',
  /** Set when PATH / LD_LIBRARY_PATH were unset before activation (not merely empty). */
  pathUnset: '_CUDAENV_CONDA_PATH_UNSET',
  ldUnset: '_CUDAENV_CONDA_LD_UNSET',
  /** The exact entry the hook put on PATH / LD_LIBRARY_PATH, so deactivation removes only that. */
  pathAdded: '_CUDAENV_CONDA_PATH_ADDED',
  ldAdded: '_CUDAENV_CONDA_LD_ADDED',
  /**
   * A PATH entry conda will put back after deactivation: on a switch or reactivation conda
   * computes the new PATH before the deactivate scripts run and exports it afterwards, so the
   * next cudaenv activation removes this entry.
   */
  stalePath: '_CUDAENV_CONDA_STALE_PATH',
} as const;

export interface HookInfo {
  /** The version label the hook activates. */
  version: string;
  /** The version directory in the store (versions/<label>). */
  toolkit: string;
  ldLibraryPath: 'prepend' | 'none';
}
