import {realpathSync} from 'node:fs';
import {join} from 'node:path';
import {realpathIn} from '../elf/api.js';
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
  return realpathIn(ctx.sysroot, sysPath(ctx, path));
}
