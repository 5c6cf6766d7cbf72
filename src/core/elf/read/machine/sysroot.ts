import {lstatSync, readlinkSync} from 'node:fs';
import {dirname, isAbsolute, join} from 'node:path';

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
 * realpath inside `root`: every link, at any depth, resolved as a chroot would (absolute targets
 * restart at the root, `..` stops there, `..` after a link leaves the link's target). `path` is a
 * host path inside the root. Undefined when it does not exist (or loops, as ELOOP).
 */
export function realpathIn(root: string, path: string): string | undefined {
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
    const next = join(current, part);
    let isLink: boolean;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch {
      return undefined;
    }
    if (!isLink) {
      current = next;
      continue;
    }
    if (++hops > 40) return undefined;
    const target = readlinkSync(next);
    if (isAbsolute(target)) current = r;
    parts = [...target.split('/').filter(Boolean), ...parts];
  }
  return current || '/';
}
