import {closeSync, openSync} from 'node:fs';
import {isatty} from 'node:tty';
import {CudaenvError} from '../errors.js';

/**
 * The signals that stop an install: Ctrl-C (SIGINT), `kill` or a service manager (SIGTERM), and
 * the terminal closing (SIGHUP). Each ends the same way, at a terminal or not, with the live
 * display or plain lines: the downloads stop, the staging directory is removed, the message
 * says so, and the exit status is 128 + the signal's number, as a shell reports a process the
 * signal killed.
 */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = typeof STOP_SIGNALS[number];

const NUMBER: Record<StopSignal, number> = {SIGHUP: 1, SIGINT: 2, SIGTERM: 15};

export function interruptedError(signal: StopSignal): CudaenvError {
  return new CudaenvError(`interrupted by ${signal}; nothing was installed`, {
    exitCode: 128 + NUMBER[signal], code: 'interrupted',
    hint: 'Run the same command again: verified downloads are kept in the cache, and an interrupted download is resumed.',
  });
}

/**
 * After a hangup the terminal is gone, and Node's own exit aborts the process (SIGABRT, or
 * SIGSEGV once its handler is gone): it restores the terminal's settings on the descriptors that
 * were a terminal at start, tcsetattr fails with EIO, and an assertion allows only EPERM (Node
 * 20 to 26, node.cc ResetStdio). Those descriptors are pointed at /dev/null, which is what the
 * terminal is now for this process, so that Node skips them ("reopened") and the exit status is
 * cudaenv's. Run at exit, when no other work can take the descriptor number meanwhile; one
 * that is taken anyway is left closed, which Node skips too.
 */
function leaveTerminal(fds: readonly number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd);
      const got = openSync('/dev/null', fd === 0 ? 'r' : 'w');
      if (got !== fd) closeSync(got);
    } catch {
      // nothing more can be done, and nothing must stop the exit
    }
  }
}

/**
 * Aborts `controller` on the first stop signal (later ones change nothing: the first is being
 * handled, and the cleanup is short). A closed terminal is a hangup: writes to it fail with EIO
 * (the live display redraws every few milliseconds, often before the SIGHUP handler has run),
 * and such a failure must not end the process before the cleanup and its exit status; so from
 * the start an EIO on stdout or stderr is taken as the terminal gone, and anything else is
 * raised as before. Returns the function that removes the handlers (those for EIO stay once the
 * terminal is gone: the message written afterwards fails too).
 */
export function abortOnStopSignals(controller: AbortController): () => void {
  const terminals = [0, 1, 2].filter((fd) => isatty(fd));
  let gone = false;
  const terminalGone = (): void => {
    if (gone) return;
    gone = true;
    if (terminals.length > 0) process.once('exit', () => leaveTerminal(terminals));
  };
  // oclif's own listener raises every error but EPIPE: it sees an EIO only if it is not one.
  const restore: Array<() => void> = [];
  for (const stream of [process.stdout, process.stderr]) {
    const before = stream.listeners('error') as Array<(error: unknown) => void>;
    const onWriteError = (error: NodeJS.ErrnoException): void => {
      if (error?.code === 'EIO') {
        terminalGone();
        return;
      }
      for (const listener of before) listener.call(stream, error);
      if (before.length === 0) throw error;
    };
    stream.removeAllListeners('error');
    stream.on('error', onWriteError);
    restore.push(() => {
      stream.off('error', onWriteError);
      for (const listener of before) stream.on('error', listener);
    });
  }
  const handler = (signal: NodeJS.Signals): void => {
    if (signal === 'SIGHUP') terminalGone();
    if (!controller.signal.aborted) controller.abort(interruptedError(signal as StopSignal));
  };
  for (const s of STOP_SIGNALS) process.on(s, handler);
  return () => {
    for (const s of STOP_SIGNALS) process.off(s, handler);
    if (!gone) for (const r of restore) r();
  };
}
