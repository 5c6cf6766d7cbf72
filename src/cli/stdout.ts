import {fstatSync, writeSync} from 'node:fs';
import {colorEnabled} from './color.js';

/**
 * Writes all of `text` to standard output synchronously, without creating `process.stdout`. On a
 * pipe (`eval "$(cudaenv use 12.4)"`, what the shell function runs at every switch) Node builds a
 * net.Socket for that stream, loading `net` and `stream`: 3.4 ms, a sixth of what `node -e 0`
 * costs, for issue 13's "at most 2x `node -e 0`" (bench/RESULTS.md).
 *
 * A stdout that cannot take the bytes now (a pipe someone made non-blocking: EAGAIN) gets the rest
 * through `process.stdout`, which waits until it can. A reader that went away (EPIPE, `| head -c0`)
 * is not an error, as oclif treats it: there is nobody left to tell.
 */
export function writeStdout(text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  let done = 0;
  while (done < bytes.length) {
    try {
      done += writeSync(1, bytes, done, bytes.length - done);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') return;
      if (code !== 'EAGAIN') throw error;
      process.stdout.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code !== 'EPIPE') throw e;
      });
      process.stdout.write(bytes.subarray(done));
      return;
    }
  }
}

/**
 * colorEnabled(process.stdout), without creating `process.stdout` where standard output cannot be
 * a terminal: a pipe or a file (not a character device) is none, so `$(cudaenv current)` in a
 * prompt starts no stream. A character device (a terminal, or /dev/null) is asked as before.
 */
export function stdoutColorEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  try {
    if (!fstatSync(1).isCharacterDevice()) return false;
  } catch {
    return false;
  }
  return colorEnabled(process.stdout, env);
}
