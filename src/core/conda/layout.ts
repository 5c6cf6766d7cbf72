import {join} from 'node:path';
import {toolkitLibDir} from '../shell/toolkit-env.js';
import type {HookInfo} from './names.js';

/** The directories a hook puts on PATH and LD_LIBRARY_PATH (lib undefined under the `none` policy). */
export function hookLayout(info: HookInfo): {bin: string; lib?: string} {
  return {
    bin: join(info.toolkit, 'bin'),
    lib: info.ldLibraryPath === 'prepend' ? toolkitLibDir(info.toolkit) : undefined,
  };
}

/** The one line an activation prints when the version directory has gone. */
export function goneWarning(info: HookInfo): string {
  return `cudaenv: CUDA ${info.version} (${info.toolkit}) is no longer installed; this conda environment's CUDA hook does nothing. ` +
    `Install it again (cudaenv install ${info.version}) or remove the hook (cudaenv conda hook uninstall).`;
}
