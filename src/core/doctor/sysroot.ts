import {lstatSync, readlinkSync, realpathSync} from 'node:fs';
import {dirname, isAbsolute, join} from 'node:path';
import type {DoctorContext} from './types.js';

/**
 * A system path as doctor reads it: under CUDAENV_SYSROOT when one is set. A path that is
 * already inside the root (a cache built from real temp paths) is kept as it is.
 */
export function sysPath(ctx: Pick<DoctorContext, 'sysroot'>, path: string): string {
  if (!ctx.sysroot) return path;
  const root = ctx.sysroot.replace(/\/+$/, '');
  if (path === root || path.startsWith(`${root}/`)) return path;
  return join(root, path);
}

/** The path as a user would see it: the sysroot prefix removed, for messages. */
export function displayPath(ctx: Pick<DoctorContext, 'sysroot'>, path: string): string {
  if (!ctx.sysroot) return path;
  const root = ctx.sysroot.replace(/\/+$/, '');
  return path.startsWith(`${root}/`) ? path.slice(root.length) : path;
}

/**
 * realpath inside the sysroot: every link, at any depth, is resolved as the machine the root
 * stands for would resolve it (absolute targets restart at the root, `..` stops there).
 * Undefined when the path does not exist.
 */
export function sysRealpath(ctx: Pick<DoctorContext, 'sysroot'>, path: string): string | undefined {
  if (!ctx.sysroot) {
    try {
      return realpathSync(path);
    } catch {
      return undefined;
    }
  }
  const root = ctx.sysroot.replace(/\/+$/, '');
  let parts = sysPath(ctx, path).slice(root.length).split('/').filter(Boolean);
  let current = root;
  let hops = 0;
  while (parts.length > 0) {
    const part = parts.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      if (current !== root) current = dirname(current);
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
    if (++hops > 40) return undefined; // a loop: ELOOP
    const target = readlinkSync(next);
    if (isAbsolute(target)) current = root;
    parts = [...target.split('/').filter(Boolean), ...parts];
  }
  return current;
}
