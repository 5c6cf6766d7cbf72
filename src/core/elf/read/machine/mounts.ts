import {readFileSync, realpathSync} from 'node:fs';

/**
 * Which files lie on a file system mounted `noexec`: ld.so maps a library's code with PROT_EXEC,
 * which the kernel refuses there, so loading it fails with "failed to map segment from shared
 * object" (a dependency, a dlopen, the main object) or "cannot be preloaded (...): ignored" (an
 * LD_PRELOAD entry). HPC scratch and /tmp, /dev/shm and some home directories are mounted so.
 * Read from /proc/self/mountinfo, as the kernel's path walk finds the mount that holds a path
 * (see mountHolding): a mount hidden by one mounted over it, or over a directory above it, holds
 * nothing.
 */
export interface Mount {
  id: number;
  parent: number;
  point: string;
  noexec: boolean;
}

let mounts: Mount[] | undefined;

/** mountinfo escapes space, tab, newline and backslash as \ooo. */
const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));

/** The mounts of a mountinfo text (proc(5)), in its order. */
export function parseMountinfo(text: string): Mount[] {
  const out: Mount[] = [];
  for (const line of text.split('\n')) {
    // id parent major:minor root mount-point per-mount-options [optional...] - fstype source super-options
    const f = line.split(' ');
    if (f.length < 6) continue;
    out.push({id: Number(f[0]), parent: Number(f[1]), point: unescape(f[4]), noexec: f[5].split(',').includes('noexec')});
  }
  return out;
}

function readMounts(): Mount[] {
  if (mounts) return mounts;
  try {
    mounts = parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'));
  } catch {
    mounts = [];
  }
  return mounts;
}

const under = (path: string, point: string): boolean => point === '/' || path === point || path.startsWith(`${point}/`);

/**
 * The mount that holds `path` (absolute, links resolved), walked down from the root mount as the
 * kernel crosses mount points: at each mount, a child mounted on that mount's own root covers it
 * whole (what `mount` over a directory that already is a mount point makes); otherwise the child
 * whose mount point the path reaches first (the shallowest) is entered. A mount under a directory
 * that another was mounted over later is thereby never reached, though its point is the longest
 * prefix: /a/b mounted inside the /a mount, then /a mounted again; or /a/b mounted, then /a.
 * Without a usable tree (no root mount: a mountinfo that is not the kernel's), the last listed of
 * the longest mount points above the path.
 */
export function mountHolding(list: readonly Mount[], path: string): Mount | null {
  const ids = new Set(list.map((m) => m.id));
  const children = new Map<number, Mount[]>();
  for (const m of list) {
    if (m.parent === m.id || !ids.has(m.parent)) continue;
    const kids = children.get(m.parent);
    if (kids) kids.push(m);
    else children.set(m.parent, [m]);
  }
  // The namespace's root: the mount whose parent lies outside it (a container, a chroot) or is itself.
  const root = list.find((m) => (m.parent === m.id || !ids.has(m.parent)) && m.point === '/');
  if (!root) return longestPrefix(list, path);
  let current: Mount = root;
  // Bounded by the number of mounts: a parent loop in a made-up text cannot spin.
  for (let depth = 0; depth < list.length; depth++) {
    const point = current.point;
    const kids = children.get(current.id) ?? [];
    const cover = kids.filter((k) => k.point === point).pop();
    if (cover) {
      current = cover;
      continue;
    }
    // The walk meets the shallowest of them first and crosses into it: a deeper child of this same
    // mount lies under that one's mount point, hidden (it was mounted before the shallower one).
    let next: Mount | undefined;
    for (const k of kids) if (under(path, k.point) && (!next || k.point.length <= next.point.length)) next = k;
    if (!next) return current;
    current = next;
  }
  return current;
}

function longestPrefix(list: readonly Mount[], path: string): Mount | null {
  let best: Mount | null = null;
  for (const m of list) if (under(path, m.point) && (best === null || m.point.length >= best.point.length)) best = m;
  return best;
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
  const m = mountHolding(readMounts(), real);
  return m?.noexec ? m.point : null;
}

/** Every noexec mount point (what a cached verdict depends on besides the files). */
export function noexecMountPoints(): string[] {
  return readMounts().filter((m) => m.noexec).map((m) => m.point);
}
