import {CudaenvError, isErrno} from '../core/errors.js';

/**
 * A file-system error that reached the command without being explained (a read-only store,
 * a full disk) still names the path, from Node's message, and says what to do.
 */
export function withErrnoHint(error: Error & {exitCode?: number}): Error & {exitCode?: number} {
  const e: unknown = error;
  if (error instanceof CudaenvError || !isErrno(e) || typeof e.path !== 'string') return error;
  // Our atomic writes fail on their temporary file: name the directory the user must fix.
  const path = e.path.replace(/\/\.[^/]+\.\d+\.\d+\.tmp$/, '');
  const hints: Record<string, string> = {
    EACCES: `You may not write or read ${path}: run cudaenv as the owner of the store, fix its permissions, or point CUDAENV_DIR at a store you own.`,
    EPERM: `You may not change ${path}: run cudaenv as the owner of the store, fix its permissions, or point CUDAENV_DIR at a store you own.`,
    EROFS: `${path} is on a read-only file system: point CUDAENV_DIR at a writable store.`,
    ENOSPC: 'The disk is full: free some space and try again.',
    EDQUOT: 'Your disk quota is used up: free some space and try again.',
  };
  return new CudaenvError(e.message, {hint: hints[e.code!] ?? `Check ${path} and try again.`, cause: error});
}
