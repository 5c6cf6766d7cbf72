import {runFatalCleanups} from '../core/fatal-cleanup.js';
import {redactCredentials} from '../core/text/redact.js';

/**
 * The last resort: an exception that nothing caught (a bug of ours, or one thrown from a
 * dependency's event handler, such as undici's `assert(!this.paused)` was) becomes one clear
 * line and exit status 1 instead of Node's stack trace - after releasing the locks this
 * process held and removing its staging directory (a verified cache file or a resumable
 * `.part` is kept). CUDAENV_DEBUG=1 adds the stack.
 */
export function installLastResort(argv: string[] = process.argv.slice(2)): void {
  let dying = false;
  const fatal = (error: unknown): void => {
    if (dying) return; // a second failure while cleaning up: the first one is the story
    dying = true;
    try {
      runFatalCleanups();
    } catch {
      // runFatalCleanups never throws; nothing must stop the exit below
    }
    const what = error instanceof Error ? `${error.name === 'Error' ? '' : `${error.name}: `}${error.message}` : String(error);
    const message = `unexpected internal error: ${redactCredentials(what.replace(/\s+/g, ' ').trim())}`;
    const hint = 'This is a bug in cudaenv; the locks and temporary files of this run were cleaned up. Run the command again (CUDAENV_DEBUG=1 shows where it happened) and report it.';
    if (argv.includes('--json')) {
      process.stdout.write(`${JSON.stringify({ok: false, error: {code: 'internal', message, hint}}, null, 2)}\n`);
    }
    if (process.stderr.isTTY) process.stderr.write('\u001B[?25h\n'); // a progress display may have hidden the cursor mid-line
    process.stderr.write(`cudaenv: ${message}. ${hint}\n`);
    if (process.env.CUDAENV_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
    process.exit(1);
  };
  process.on('uncaughtException', fatal);
  process.on('unhandledRejection', fatal);
}
