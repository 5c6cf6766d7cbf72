import {readFileSync} from 'node:fs';
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
