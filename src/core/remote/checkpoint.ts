import {existsSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {writeFileSafely} from '../safe-fs/index.js';

/**
 * A seam for the crash tests: with CUDAENV_TEST_CHECKPOINT_DIR set, the installer writes
 * `<dir>/<name>` on reaching a named point and, if `<dir>/<name>.pause` exists, waits there
 * until `<dir>/<name>.go` exists, so a test can SIGKILL it at exactly that point. If
 * `<dir>/<name>.crash` exists, an error nothing catches is raised there instead, from a timer
 * (as a bug in a dependency's event handler would be), or as an unhandled rejection when the
 * file says `rejection`: the last-resort handler's tests.
 * Unset (always, outside tests): nothing.
 */
export async function checkpoint(name: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const dir = env.CUDAENV_TEST_CHECKPOINT_DIR;
  if (!dir) return;
  writeFileSafely(join(dir, name), String(process.pid), {durable: false});
  const crash = join(dir, `${name}.crash`);
  if (existsSync(crash)) {
    const error = new Error(`injected crash at ${name}`);
    if (readFileSync(crash, 'utf8').trim() === 'rejection') void Promise.reject(error);
    else setTimeout(() => {
      throw error;
    }, 0);
    await new Promise(() => undefined); // never goes on: the process ends in the handler
  }
  if (!existsSync(join(dir, `${name}.pause`))) return;
  while (!existsSync(join(dir, `${name}.go`))) await new Promise((r) => setTimeout(r, 20));
}
