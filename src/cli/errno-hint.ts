import {statSync} from 'node:fs';
import {dirname} from 'node:path';
import {CudaenvError, isErrno} from '../core/errors.js';
import {storeRoot} from '../core/store/paths.js';

/** Whether `error`, or an error it was made from, is the errno `code` (a CudaenvError wraps the errno it explains). */
function hasErrno(error: unknown, code: string): boolean {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as {cause?: unknown}).cause, depth++) {
    if (isErrno(e, code)) return true;
    if (e instanceof Error && e.message.includes(`${code}:`)) return true;
  }
  return false;
}

/**
 * The store is a file, not a directory (CUDAENV_DIR set to a file, or a file at ~/.cudaenv): every
 * path in it fails with ENOTDIR, which said "check the permissions". Undefined when it is not so.
 */
export function storeIsFile(error: unknown, env: NodeJS.ProcessEnv = process.env): CudaenvError | undefined {
  if (!hasErrno(error, 'ENOTDIR')) return undefined;
  const root = storeRoot(env);
  try {
    if (statSync(root).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  const named = env.CUDAENV_DIR ? `CUDAENV_DIR names ${root}` : `The store is ${root} (the default, CUDAENV_DIR is not set)`;
  return new CudaenvError(`the cudaenv store ${root} is a file, not a directory`, {
    hint: `${named}: point CUDAENV_DIR at a directory (cudaenv creates it where it is missing)${env.CUDAENV_DIR ? ' or unset it for ~/.cudaenv' : ''}, or move the file ${root} away.`,
    code: 'store-not-directory', cause: error,
  });
}

/**
 * A file-system error that reached the command without being explained (a read-only store,
 * a full disk) still names the path, from Node's message, and says what to do. An errno error
 * with no path (a write(2) through a descriptor: "ENOSPC: no space left on device, write") names
 * the store, where cudaenv writes.
 */
export function withErrnoHint(error: Error & {exitCode?: number}, env: NodeJS.ProcessEnv = process.env): Error & {exitCode?: number} {
  const notDir = storeIsFile(error, env);
  if (notDir) return notDir;
  const e: unknown = error;
  if (error instanceof CudaenvError || !isErrno(e)) return error;
  if (typeof e.path !== 'string') {
    const root = storeRoot(env);
    const where = e.code === 'ENOSPC' || e.code === 'EDQUOT'
      ? `The disk holding the cudaenv store ${root} is full: free some space there (df ${root}) and try again.`
      : `It happened in the cudaenv store ${root} (CUDAENV_DIR) or a file the command wrote: check it and try again (CUDAENV_DEBUG=1 shows where).`;
    return new CudaenvError(`${e.message} (in the cudaenv store ${root})`, {hint: where, cause: error});
  }
  // Our atomic writes fail on their temporary file: name the directory the user must fix.
  const path = e.path.replace(/\/\.[^/]+\.\d+\.\d+\.tmp$/, '').replace(/\/\.[^/]+\.[0-9a-f]{16}\.tmp$/, '');
  const hints: Record<string, string> = {
    EACCES: `You may not write or read ${path}: run cudaenv as the owner of the store, fix its permissions, or point CUDAENV_DIR at a store you own.`,
    EPERM: `You may not change ${path}: run cudaenv as the owner of the store, fix its permissions, or point CUDAENV_DIR at a store you own.`,
    EROFS: `${path} is on a read-only file system: point CUDAENV_DIR at a writable store.`,
    ENOSPC: `The disk holding ${path} is full: free some space there (df ${dirname(path)}) and try again.`,
    EDQUOT: `Your disk quota on ${dirname(path)} is used up: free some space and try again.`,
  };
  return new CudaenvError(e.message, {hint: hints[e.code!] ?? `Check ${path} and try again.`, cause: error});
}
