import {existsSync, readFileSync} from 'node:fs';
import {parseProcDriverVersion} from '../../../versions/driver-version.js';

const known = new Map<string, string | null>();

/**
 * The version of the NVIDIA kernel module this machine (or the sysroot's image) runs, from
 * /proc/driver/nvidia/version; null without the driver. The user-space libcuda must come from the
 * same release (or, through a cuda-compat package, a newer one for an older module).
 */
export function kernelDriverVersion(sysroot: string): string | null {
  let version = known.get(sysroot);
  if (version === undefined) {
    try {
      version = parseProcDriverVersion(readFileSync(`${sysroot}/proc/driver/nvidia/version`, 'utf8'))?.version ?? null;
    } catch {
      version = null;
    }
    known.set(sysroot, version);
  }
  return version;
}

const loadedModule = new Map<string, boolean>();

/**
 * Whether an NVIDIA kernel module is loaded here (or in the sysroot's image): /proc/driver/nvidia/version
 * (the module's own file) or /sys/module/nvidia (the kernel's list of modules; present before the
 * version file can be read, as inside some containers). Without one, no libcuda.so.1 can work, so
 * its absence is what a build host, a login node or a container without `--gpus` looks like.
 */
export function nvidiaModuleLoaded(sysroot: string): boolean {
  let loaded = loadedModule.get(sysroot);
  if (loaded === undefined) {
    loaded = kernelDriverVersion(sysroot) !== null || existsSync(`${sysroot}/proc/driver/nvidia/version`) || existsSync(`${sysroot}/sys/module/nvidia`);
    loadedModule.set(sysroot, loaded);
  }
  return loaded;
}
