import {readFileSync, realpathSync} from 'node:fs';

/**
 * Which files lie on a file system mounted `noexec`: ld.so maps a library's code with PROT_EXEC,
 * which the kernel refuses there, so loading it fails with "failed to map segment from shared
 * object" (a dependency, a dlopen, the main object) or "cannot be preloaded (...): ignored" (an
 * LD_PRELOAD entry). HPC scratch and /tmp, /dev/shm and some home directories are mounted so.
 * Read from /proc/self/mountinfo: the mount that holds a path is the one with the longest mount
 * point above it, the last listed where one is mounted over another.
 */
interface Mount {
  point: string;
  noexec: boolean;
}

let mounts: Mount[] | undefined;

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));

function readMounts(): Mount[] {
  if (mounts) return mounts;
  mounts = [];
  let text = '';
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return mounts;
  }
  for (const line of text.split('\n')) {
    // id parent major:minor root mount-point per-mount-options [optional...] - fstype source super-options
    const f = line.split(' ');
    if (f.length < 6) continue;
    mounts.push({point: unescape(f[4]), noexec: f[5].split(',').includes('noexec')});
  }
  return mounts;
}

const answers = new Map<string, string | null>();

/** The noexec mount point that holds `path` (symlinks resolved as the kernel would), or null. */
export function noexecMountOf(path: string): string | null {
  // A check asks for the same few hundred libraries in every modelled process.
  let answer = answers.get(path);
  if (answer === undefined) {
    answer = readMounts().some((m) => m.noexec) ? lookUp(path) : null;
    answers.set(path, answer);
  }
  return answer;
}

function lookUp(path: string): string | null {
  let real: string;
  try {
    real = realpathSync.native(path);
  } catch {
    return null;
  }
  let best: Mount | null = null;
  for (const m of readMounts()) {
    const inside = m.point === '/' || real === m.point || real.startsWith(`${m.point}/`);
    if (inside && (best === null || m.point.length >= best.point.length)) best = m;
  }
  return best?.noexec ? best.point : null;
}

/** Every noexec mount point (what a cached verdict depends on besides the files). */
export function noexecMountPoints(): string[] {
  return readMounts().filter((m) => m.noexec).map((m) => m.point);
}
