import {lstatSync, readlinkSync, renameSync, rmSync, symlinkSync} from 'node:fs';
import {basename, dirname, join} from 'node:path';

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

let counter = 0;

/**
 * Points `target` at `value` atomically: a new link is made beside the target and renamed
 * over it (rename(2) replaces a symlink in one step), so a reader never finds the target
 * missing. The temporary name is unique per process and call, so concurrent swaps do not
 * collide; the last rename wins and every intermediate state is a complete link.
 */
export function swapSymlink(target: string, value: string): void {
  const tmp = join(dirname(target), `.${basename(target)}.cudaenv-${process.pid}-${Date.now()}-${counter++}`);
  symlinkSync(value, tmp);
  try {
    renameSync(tmp, target);
  } catch (error) {
    rmSync(tmp, {force: true});
    throw error;
  }
}

/** Removes a symlink we created where nothing was before (never a directory or file). */
export function removeSymlink(target: string): void {
  const st = inspectTarget(target);
  if (st.kind === 'symlink') rmSync(target);
}
