import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';

/**
 * A fresh temporary directory, removed by the returned cleanup. The retries cover a process a
 * test started (a shell's background job) still writing into it for a moment.
 */
export interface TempDir {
  dir: string;
  cleanup: () => void;
}

export function makeTempDir(prefix = 'cudaenv-test-'): TempDir {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {dir, cleanup: () => rmSync(dir, {recursive: true, force: true, maxRetries: 5, retryDelay: 200})};
}
