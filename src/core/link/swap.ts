import {lstatSync, readlinkSync} from 'node:fs';
import {removeSafely, symlinkSafely} from '../safe-fs/index.js';

/** What is at a link target now. Only `absent` and `symlink` may be replaced. */
export type TargetState =
  | {kind: 'absent'}
  | {kind: 'symlink'; value: string}
  | {kind: 'directory'}
  | {kind: 'file'}
  | {kind: 'other'};

export function inspectTarget(target: string): TargetState {
  let st;
  try {
    st = lstatSync(target);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {kind: 'absent'};
    throw error;
  }
  if (st.isSymbolicLink()) return {kind: 'symlink', value: readlinkSync(target)};
  if (st.isDirectory()) return {kind: 'directory'};
  if (st.isFile()) return {kind: 'file'};
  return {kind: 'other'};
}

/**
 * Points `target` at `value` atomically: a new link of a random name is made beside the target
 * and renamed over it (rename(2) replaces a symlink in one step), so a reader never finds the target
 * missing, and concurrent swaps never collide; the last rename wins and every intermediate state is a
 * complete link. The directory is reached by safe-fs, so as root a directory another user can
 * change is refused, not followed.
 */
export function swapSymlink(target: string, value: string): void {
  symlinkSafely(target, value, {dirMode: 0o755});
}

/** Removes a symlink we created where nothing was before (never a directory or file). */
export function removeSymlink(target: string): void {
  const st = inspectTarget(target);
  if (st.kind === 'symlink') removeSafely(target);
}
