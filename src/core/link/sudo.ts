import {CudaenvError, isErrno} from '../errors.js';
import {quoteSh} from '../text/quote.js';

/**
 * The exact command to run again with root's permissions. sudo resets the environment, so a
 * CUDAENV_DIR in effect is passed on the command line; without it cudaenv finds SUDO_USER's
 * store by itself (src/core/store/paths.ts).
 */
export function sudoCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): string {
  const words = ['sudo'];
  if (env.CUDAENV_DIR) words.push(`CUDAENV_DIR=${quoteSh(env.CUDAENV_DIR)}`);
  for (const name of ['CUDAENV_ALTDIR', 'CUDAENV_ADMINDIR', 'CUDAENV_ALTLOG', 'CUDAENV_LDSO_CONF', 'CUDAENV_LDSO_CACHE']) {
    if (env[name]) words.push(`${name}=${quoteSh(env[name]!)}`);
  }
  words.push('cudaenv', ...argv.map(quoteSh));
  return words.join(' ');
}

export function isPermissionError(error: unknown): boolean {
  return isErrno(error, 'EACCES') || isErrno(error, 'EPERM') || isErrno(error, 'EROFS');
}

export function permissionError(what: string, path: string, argv: string[], env: NodeJS.ProcessEnv = process.env, cause?: unknown): CudaenvError {
  return new CudaenvError(`permission denied: cannot ${what} ${path}`, {
    hint: `Run it as root: ${sudoCommand(argv, env)}`,
    code: 'permission-denied',
    cause,
  });
}
