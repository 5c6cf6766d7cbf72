import {existsSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';

/**
 * A seam for the crash tests: with CUDAENV_TEST_CHECKPOINT_DIR set, the installer writes
 * `<dir>/<name>` on reaching a named point and, if `<dir>/<name>.pause` exists, waits there
 * until `<dir>/<name>.go` exists, so a test can SIGKILL it at exactly that point.
 * Unset (always, outside tests): nothing.
 */
export async function checkpoint(name: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const dir = env.CUDAENV_TEST_CHECKPOINT_DIR;
  if (!dir) return;
  writeFileSync(join(dir, name), String(process.pid));
  if (!existsSync(join(dir, `${name}.pause`))) return;
  while (!existsSync(join(dir, `${name}.go`))) await new Promise((r) => setTimeout(r, 20));
}
