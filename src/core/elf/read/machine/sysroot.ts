import {lstatSync, readlinkSync} from 'node:fs';
import {dirname, isAbsolute} from 'node:path';

/**
 * Paths inside a system image (CUDAENV_SYSROOT) as the machine it stands for sees them: a link
 * to an absolute path (Debian's libblas.so.3 -> /etc/alternatives/libblas.so.3-x86_64-linux-gnu,
 * /lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/...) points into the image, not the host.
 */

/** The root without trailing slashes ('' for none). */
export function normalRoot(root: string | undefined): string {
  return (root ?? '').replace(/\/+$/, '');
}

/** Whether `path` lies inside `root` (a non-empty normalised root). */
export function isInside(root: string, path: string): boolean {
  return root !== '' && (path === root || path.startsWith(`${root}/`));
}

/**
 * The host path of an absolute path a program inside the image names (a DT_RPATH, DT_RUNPATH or
 * DT_NEEDED path, an LD_PRELOAD entry): the same path under the image's root. One already under the
 * root is taken as it is: an object's $ORIGIN expands to its host path, the fixes name files by their
 * host paths, and the image's own paths do not begin with the host's mount point of it.
 */
export function inImage(root: string, path: string): string {
  return root === '' || isInside(root, path) ? path : root + path;
}

/**
 * What lstat and readlink said of each path, shared by the realpathIn calls of the checks running
 * (withLinkAnswers): a cached check of the PyTorch image resolved the same image directories for
 * every fact it compared (1924 stats of 329 paths, 378 readlinks). A path's answer: the link's
 * target, null for no link, false for nothing there. Outside a check, every call asks again.
 */
let answers: Map<string, string | null | false> | null = null;
/** And realpathIn's own answers (null: undefined), kept as long. */
let resolved: Map<string, string | null> | null = null;
let checksRunning = 0;

/** `run` with lstat/readlink answers kept for realpathIn until the last check running ends. */
export async function withLinkAnswers<T>(run: () => Promise<T>): Promise<T> {
  if (checksRunning++ === 0) {
    answers = new Map();
    resolved = new Map();
  }
  try {
    return await run();
  } finally {
    if (--checksRunning === 0) {
      answers = null;
      resolved = null;
    }
  }
}

function linkAt(path: string): string | null | false {
  const known = answers?.get(path);
  if (known !== undefined) return known;
  const answer = linkNow(path);
  answers?.set(path, answer);
  return answer;
}

/** A path's link target, null for no link, false for nothing there, asked now. */
function linkNow(path: string): string | null | false {
  let st;
  try {
    // No exception for the common 'nothing there' (an Error with its stack each time).
    st = lstatSync(path, {throwIfNoEntry: false});
  } catch {
    return false;
  }
  if (st === undefined) return false;
  // A link that cannot be read is an error, as it always was.
  return st.isSymbolicLink() ? readlinkSync(path) : null;
}

/**
 * realpath inside `root`: every link, at any depth, resolved as a chroot would (absolute targets
 * restart at the root, `..` stops there, `..` after a link leaves the link's target). `path` is a
 * host path inside the root. Undefined when it does not exist (or loops, as ELOOP).
 */
export function realpathIn(root: string, path: string): string | undefined {
  const key = `${root}\0${path}`;
  const known = resolved?.get(key);
  if (known !== undefined) return known ?? undefined;
  const answer = resolveIn(root, path, linkAt);
  resolved?.set(key, answer ?? null);
  return answer;
}

/**
 * Answers of realpathIn known to hold (the verdict cache showed that nothing they rest on changed),
 * kept for the rest of the checks running like the answers they computed; outside a check, nothing.
 */
export function rememberRealpathsIn(root: string, answers: Iterable<readonly [string, string | undefined]>): void {
  if (!resolved) return;
  for (const [path, answer] of answers) resolved.set(`${root}\0${path}`, answer ?? null);
}

/**
 * realpathIn asked of the file system now (never from a check's kept answers), adding to `dirs`
 * every directory whose entries it read: the answer can only change with one of them (an entry
 * added, removed, renamed or replaced changes its directory's mtime; a link's target cannot be
 * rewritten in place), which lets the verdict cache tell many answers unchanged by a few stats.
 */
export function realpathInNow(root: string, path: string, dirs: Set<string>): string | undefined {
  return resolveIn(root, path, linkNow, dirs);
}

function resolveIn(root: string, path: string, at: (path: string) => string | null | false, dirs?: Set<string>): string | undefined {
  const r = normalRoot(root);
  let parts = path.slice(r.length).split('/').filter(Boolean);
  let current = r;
  let hops = 0;
  while (parts.length > 0) {
    const part = parts.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      if (current !== r) current = dirname(current);
      continue;
    }
    // A component holds no '/' and is no '.' or '..': path.join's normalising would change nothing.
    const next = `${current}/${part}`;
    dirs?.add(current || '/');
    const target = at(next);
    if (target === false) return undefined;
    if (target === null) {
      current = next;
      continue;
    }
    if (++hops > 40) return undefined;
    if (isAbsolute(target)) current = r;
    parts = [...target.split('/').filter(Boolean), ...parts];
  }
  return current || '/';
}
