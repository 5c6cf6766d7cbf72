import {spawn} from 'node:child_process';
import {constants} from 'node:os';
import {CudaenvError} from '../errors.js';

const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGWINCH'];

/**
 * Runs a command in the foreground with the given environment, forwards signals to it,
 * and resolves to the status a shell would report: its exit code, or 128 + the signal.
 */
export function runForeground(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {stdio: 'inherit', env});
    const handlers = new Map<NodeJS.Signals, () => void>();
    for (const sig of FORWARDED) {
      const handler = () => {
        child.kill(sig);
      };
      handlers.set(sig, handler);
      process.on(sig, handler);
    }
    const cleanup = () => {
      for (const [sig, handler] of handlers) process.off(sig, handler);
    };
    child.on('error', (error: NodeJS.ErrnoException) => {
      cleanup();
      const notFound = error.code === 'ENOENT';
      reject(new CudaenvError(`cannot run ${command}: ${notFound ? 'command not found' : error.message}`, {
        hint: notFound ? 'Check the name, or that the selected toolkit provides it (cudaenv which NAME).' : undefined,
        exitCode: notFound ? 127 : 126,
        code: notFound ? 'command-not-found' : 'exec-failed',
      }));
    });
    child.on('exit', (code, signal) => {
      cleanup();
      if (signal) resolve(128 + (constants.signals[signal] ?? 0));
      else resolve(code ?? 1);
    });
  });
}
