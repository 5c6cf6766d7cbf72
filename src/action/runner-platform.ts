import {CudaenvError} from '../core/errors.js';
import {machinePlatform, type Platform} from '../core/remote/platform.js';

const OS_NAMES: Record<string, string> = {darwin: 'macOS', win32: 'Windows', linux: 'Linux'};

/**
 * The redist platform of this runner. NVIDIA publishes Linux archives only; the action
 * refuses anything else before reading a single input, so a wrong `runs-on` fails in a second.
 */
export function runnerPlatform(os: string = process.platform, arch: string = process.arch, isTegra?: () => boolean): Platform {
  if (os !== 'linux' || (arch !== 'x64' && arch !== 'arm64')) {
    throw new CudaenvError(`cudaenv's action installs CUDA on Linux x86_64 and arm64 runners only; this runner is ${OS_NAMES[os] ?? os} ${arch}`, {
      hint: 'Run this step on a Linux runner (runs-on: ubuntu-latest, or ubuntu-24.04-arm for arm64).', code: 'unsupported-runner',
    });
  }
  return machinePlatform(arch, isTegra);
}
