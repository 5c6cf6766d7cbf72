import {closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync} from 'node:fs';
import {dirname, basename, join} from 'node:path';

/** Writes a file so that readers see the old content or the new one, never a part. */
export function atomicWriteFile(path: string, content: string | Uint8Array, mode = 0o644, options: {durable?: boolean} = {}): void {
  mkdirSync(dirname(path), {recursive: true});
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  const fd = openSync(tmp, 'w', mode);
  try {
    writeSync(fd, typeof content === 'string' ? Buffer.from(content) : content);
    // durable: false for caches, where a file lost to a power cut is only recomputed.
    if (options.durable !== false) fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(tmp, {force: true});
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (error) {
    rmSync(tmp, {force: true});
    throw error;
  }
}
