import {existsSync} from 'node:fs';
import {arch as osArch} from 'node:os';
import {UsageError} from '../errors.js';

/** Linux platforms of NVIDIA's redist tree. `linux-aarch64` is Jetson (L4T); servers use `linux-sbsa`. */
export const PLATFORMS = ['linux-x86_64', 'linux-sbsa', 'linux-aarch64'] as const;
export type Platform = typeof PLATFORMS[number];

const ALIASES: Record<string, Platform> = {
  'x86_64': 'linux-x86_64', 'x64': 'linux-x86_64', 'amd64': 'linux-x86_64', 'linux-x86_64': 'linux-x86_64',
  'sbsa': 'linux-sbsa', 'arm64': 'linux-sbsa', 'aarch64': 'linux-sbsa', 'linux-sbsa': 'linux-sbsa',
  'jetson': 'linux-aarch64', 'tegra': 'linux-aarch64', 'l4t': 'linux-aarch64', 'linux-aarch64': 'linux-aarch64',
};

/** Maps `--arch` (x86_64, sbsa, aarch64, linux-sbsa, jetson...) to a redist platform key. */
export function parsePlatform(text: string): Platform {
  const platform = ALIASES[text.trim().toLowerCase()];
  if (!platform) {
    throw new UsageError(`--arch ${JSON.stringify(text)} is not an architecture cudaenv knows`, `Use one of ${PLATFORMS.join(', ')} (or x86_64, sbsa, aarch64).`);
  }
  return platform;
}

/**
 * The machine's platform. An arm64 machine is a Jetson when the L4T release file exists;
 * otherwise it is a server (sbsa), which is also what CUDA 13 uses for Jetson Thor.
 */
export function machinePlatform(arch: string = osArch(), isTegra: () => boolean = detectTegra): Platform {
  if (arch === 'x64') return 'linux-x86_64';
  if (arch === 'arm64') return isTegra() ? 'linux-aarch64' : 'linux-sbsa';
  throw new UsageError(`this machine's architecture ${arch} has no CUDA redist archives`, 'Pass --arch linux-x86_64, linux-sbsa or linux-aarch64 to download for another machine.');
}

function detectTegra(): boolean {
  return existsSync('/etc/nv_tegra_release');
}

/** The `targets/<arch>-linux` directory name NVIDIA uses for a platform. */
export function targetDirName(platform: Platform): string {
  return platform === 'linux-x86_64' ? 'x86_64-linux' : platform === 'linux-sbsa' ? 'sbsa-linux' : 'aarch64-linux';
}
