import type {StorePaths} from '../store/paths.js';
import {readSettingSync} from '../store/settings.js';
import {chooseMirror, DEFAULT_CUDA_MIRROR, DEFAULT_CUDNN_MIRROR, type Mirror} from './mirror.js';

/** The CUDA and cuDNN mirrors in effect: flag, else environment, else settings, else NVIDIA. */
export async function mirrorsFor(paths: StorePaths, flag: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<{cuda: Mirror; cudnn: Mirror}> {
  let settings: {mirror?: string; cudnnMirror?: string} = {};
  if (flag === undefined && !env.CUDAENV_MIRROR || !env.CUDAENV_CUDNN_MIRROR) {
    // Read straight from config.json, validated as `conf` would give them: loading `conf` (and
    // its JSON-schema compiler) cost install ~0.1 s of CPU at start-up for two strings.
    settings = {mirror: readSettingSync(paths, 'mirror'), cudnnMirror: readSettingSync(paths, 'cudnnMirror')};
  }
  return {
    cuda: chooseMirror({flag, env: env.CUDAENV_MIRROR, setting: settings.mirror, fallback: DEFAULT_CUDA_MIRROR, envName: 'CUDAENV_MIRROR', settingName: 'mirror'}),
    cudnn: chooseMirror({env: env.CUDAENV_CUDNN_MIRROR, setting: settings.cudnnMirror, fallback: DEFAULT_CUDNN_MIRROR, envName: 'CUDAENV_CUDNN_MIRROR', settingName: 'cudnnMirror'}),
  };
}
