import {readlinkSync, realpathSync} from 'node:fs';
import {dirname, isAbsolute, join, resolve} from 'node:path';
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
 * realpath inside the sysroot: absolute link targets are taken relative to the root, as they
 * would be on the machine the root stands for. Undefined when the path does not exist.
 */
export function sysRealpath(ctx: Pick<DoctorContext, 'sysroot'>, path: string): string | undefined {
  if (!ctx.sysroot) {
    try {
      return realpathSync(path);
    } catch {
      return undefined;
    }
  }
  let current = sysPath(ctx, path);
  for (let hops = 0; hops < 40; hops++) {
    let target: string;
    try {
      target = readlinkSync(current);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EINVAL') break; // not a link
      // A component above may be a link: let the OS resolve the rest.
      try {
        return realpathSync(current);
      } catch {
        return undefined;
      }
    }
    current = isAbsolute(target) ? sysPath(ctx, target) : resolve(dirname(current), target);
  }
  try {
    return realpathSync(current);
  } catch {
    return undefined;
  }
}
