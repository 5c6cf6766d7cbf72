import {closeSync, constants, fstatSync, openSync, readSync} from 'node:fs';
import {basename, dirname} from 'node:path';
import {CudaenvError} from '../errors.js';
import {runningAsRoot} from './trust.js';
import {withDir} from './dir.js';

const READ = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/**
 * Reads a small regular file without following a link at its name, without blocking on a FIFO and
 * without reading past `maxBytes` (a link to /dev/zero would read forever). As root the directory
 * is reached by the safe walk (dir.ts), so a record is only read from where only root writes.
 */
export function readFileSafely(path: string, maxBytes: number): Buffer {
  const open = (at: string): Buffer => {
    const fd = openSync(at, READ);
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new CudaenvError(`${path} is not a regular file`, {hint: `Remove ${path}; cudaenv writes it anew.`, code: 'not-a-file'});
      if (st.size > maxBytes) throw new CudaenvError(`${path} is ${st.size} bytes, more than the ${maxBytes} cudaenv reads from it`, {hint: `Remove ${path}; cudaenv writes it anew.`, code: 'too-large'});
      const buf = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
      let n = 0;
      for (let got = -1; got !== 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, null);
      if (n > maxBytes) throw new CudaenvError(`${path} grew past the ${maxBytes} bytes cudaenv reads from it`, {hint: `Remove ${path}; cudaenv writes it anew.`, code: 'too-large'});
      return buf.subarray(0, n);
    } finally {
      closeSync(fd);
    }
  };
  if (!runningAsRoot()) return open(path);
  return withDir(dirname(path), {}, (dir) => open(dir.entry(basename(path))));
}
