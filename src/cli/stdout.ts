import {fstatSync, writeSync} from 'node:fs';
import {colorEnabled, warningText} from './color.js';

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
  writeFd(1, text);
}

/** writeStdout for standard error: `cudaenv check`'s warnings, without building `process.stderr` (a pipe's net.Socket). */
export function writeStderr(text: string): void {
  writeFd(2, text);
}

function writeFd(fd: 1 | 2, text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  let done = 0;
  while (done < bytes.length) {
    try {
      done += writeSync(fd, bytes, done, bytes.length - done);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') return;
      if (code !== 'EAGAIN') throw error;
      const stream = fd === 1 ? process.stdout : process.stderr;
      stream.on('error', (e: NodeJS.ErrnoException) => {
        if (e.code !== 'EPIPE') throw e;
      });
      stream.write(bytes.subarray(done));
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
  return fdColorEnabled(1, env);
}

/** stdoutColorEnabled for standard error. */
export function stderrColorEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return fdColorEnabled(2, env);
}

function fdColorEnabled(fd: 1 | 2, env: NodeJS.ProcessEnv): boolean {
  try {
    if (!fstatSync(fd).isCharacterDevice()) return false;
  } catch {
    return false;
  }
  return colorEnabled(fd === 1 ? process.stdout : process.stderr, env);
}

/** warningLine (./color.ts) written to standard error without building `process.stderr` where it is no terminal. */
export function writeWarning(message: string): void {
  writeStderr(warningText(message, stderrColorEnabled()));
}
