import {readFileSync} from 'node:fs';
import {arch as osArch} from 'node:os';
import {CudaenvError, UsageError} from '../errors.js';
import type {Manifest} from './manifest.js';

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
 * What kind of machine this is, as far as NVIDIA's archives care: x86_64, an Arm server (SBSA),
 * a Jetson before Thor (L4T, `linux-aarch64`), or a Jetson Thor-class device, which NVIDIA
 * builds CUDA for as `linux-sbsa` (JetPack 7, L4T R38, Tegra T264).
 */
export type MachineKind = 'x86_64' | 'sbsa' | 'jetson' | 'jetson-thor';

export interface MachineFiles {
  /** /etc/nv_tegra_release (L4T), undefined where absent. */
  tegraRelease?: string;
  /** /proc/device-tree/compatible (NUL-separated), undefined where absent. */
  compatible?: string;
}

function readOptional(path: string): string | undefined {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return undefined;
  }
}

export function machineKind(arch: string = osArch(), files: MachineFiles = {tegraRelease: readOptional('/etc/nv_tegra_release'), compatible: readOptional('/proc/device-tree/compatible')}): MachineKind {
  if (arch === 'x64') return 'x86_64';
  if (arch !== 'arm64') {
    throw new UsageError(`this machine's architecture ${arch} has no CUDA redist archives`, 'Pass --arch linux-x86_64, linux-sbsa or linux-aarch64 to download for another machine.');
  }
  const compatible = files.compatible?.split('\0') ?? [];
  const tegra = files.tegraRelease !== undefined || compatible.some((c) => /^nvidia,tegra/.test(c));
  if (!tegra) return 'sbsa';
  const l4t = /#\s*R(\d+)/.exec(files.tegraRelease ?? '')?.[1];
  const thor = compatible.some((c) => /^nvidia,tegra2[6-9]\d$/.test(c)) || (l4t !== undefined && Number(l4t) >= 38);
  return thor ? 'jetson-thor' : 'jetson';
}

/** The machine's platform regardless of release (tests, and where no manifest is at hand). */
export function machinePlatform(arch: string = osArch(), isTegra?: () => boolean): Platform {
  const kind = isTegra ? machineKind(arch, isTegra() ? {tegraRelease: '# R36'} : {}) : machineKind(arch);
  return kind === 'x86_64' ? 'linux-x86_64' : kind === 'jetson' ? 'linux-aarch64' : 'linux-sbsa';
}

export interface PlatformChoice {
  platform: Platform;
  /** Why this platform, for the user: "this machine is x86_64", "--arch", ... */
  why: string;
}

const KIND_WHY: Record<MachineKind, string> = {
  'x86_64': 'this machine is x86_64',
  'sbsa': 'this machine is an Arm64 server (SBSA)',
  'jetson': 'this machine is a Jetson (L4T)',
  'jetson-thor': 'this machine is a Jetson Thor-class device, for which NVIDIA builds CUDA as linux-sbsa',
};

export function hasPlatform(manifest: Manifest, platform: string): boolean {
  for (const c of manifest.components.values()) if (c.platforms.has(platform)) return true;
  return false;
}

/**
 * The platform to install a release for: `--arch` as given, else the machine's - where a
 * pre-Thor Jetson meets a release without `linux-aarch64` archives (CUDA 13, 12.3.x, 11.4-11.7),
 * there is nothing for it, and the refusal says why instead of picking archives that cannot run.
 */
export function platformForRelease(manifest: Manifest, options: {explicit?: Platform; kind?: MachineKind} = {}): PlatformChoice {
  if (options.explicit) {
    if (!hasPlatform(manifest, options.explicit)) {
      const has = PLATFORMS.filter((p) => hasPlatform(manifest, p));
      const thor = options.explicit === 'linux-aarch64' && Number(manifest.label.split('.')[0]) >= 13 ? ' From CUDA 13, Jetson Thor uses linux-sbsa.' : '';
      throw new CudaenvError(`CUDA ${manifest.label} has no ${options.explicit} archives`, {
        hint: `It has ${has.length > 0 ? has.join(', ') : 'no Linux platform cudaenv installs'}.${thor} Choose another --arch or release (cudaenv ls-remote --arch ${options.explicit}).`,
        code: 'no-platform',
      });
    }
    return {platform: options.explicit, why: 'chosen with --arch'};
  }
  const kind = options.kind ?? machineKind();
  const platform: Platform = kind === 'x86_64' ? 'linux-x86_64' : kind === 'jetson' ? 'linux-aarch64' : 'linux-sbsa';
  if (kind === 'jetson' && !hasPlatform(manifest, platform)) {
    const major = Number(manifest.label.split('.')[0]);
    throw new CudaenvError(`CUDA ${manifest.label} has no linux-aarch64 (Jetson) archives, and this machine is a Jetson before Thor`, {
      hint: major >= 13
        ? 'From CUDA 13 NVIDIA builds Jetson support only for Thor-class devices, as linux-sbsa. Install a 12.x release that has linux-aarch64 (cudaenv ls-remote marks them), or pass --arch linux-sbsa to download for another machine.'
        : 'Install a release that has linux-aarch64 archives (cudaenv ls-remote marks the others), or pass --arch to download for another machine.',
      code: 'no-platform',
    });
  }
  return {platform, why: KIND_WHY[kind]};
}

/** The `targets/<arch>-linux` directory name NVIDIA uses for a platform. */
export function targetDirName(platform: Platform): string {
  return platform === 'linux-x86_64' ? 'x86_64-linux' : platform === 'linux-sbsa' ? 'sbsa-linux' : 'aarch64-linux';
}
