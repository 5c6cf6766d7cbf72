import {existsSync, readFileSync} from 'node:fs';
import {parseProcDriverVersion} from '../../../versions/driver-version.js';
import {isDriverVersion} from '../../../versions/driver-table.js';
import {constantStringsContaining} from '../elf/rodata-strings.js';

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

const fileVersions = new Map<string, string | null>();

/**
 * The release a driver's libcuda is, from its own contents rather than its file name (a file
 * renamed, or copied under its SONAME, keeps its contents): the driver library names the
 * application-profile file of its release ("/usr/share/nvidia/nvidia-application-profiles-550.163.01-rc")
 * and, from 550 on, carries cuda-checkpoint's banner ("Version 550.163.01. Copyright ...").
 * Null for a file that holds neither (a stub, a stand-in) or that cannot be read. Keyed by the
 * file's identity (`key`), read once per process: the strings around two needles of its .rodata, found at
 * memchr speed (a regular expression over the decoded 28 MB cost 0.15-0.6 s of every first check).
 */
export function libcudaContentsVersion(path: string, key: string): string | null {
  let version = fileVersions.get(key);
  if (version === undefined) {
    version = null;
    try {
      for (const s of constantStringsContaining(path, ['nvidia-application-profiles-', '. Copyright'])) {
        const m = /nvidia-application-profiles-(\d+\.\d+(?:\.\d+)?)-rc/.exec(s) ?? /Version (\d+\.\d+(?:\.\d+)?)\. Copyright/.exec(s);
        if (m && isDriverVersion(m[1]!)) {
          version = m[1]!;
          break;
        }
      }
    } catch {
      // unreadable: the caller falls back to the file's name
    }
    fileVersions.set(key, version);
  }
  return version;
}
