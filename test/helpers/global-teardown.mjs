import {rmSync} from 'node:fs';

export default function globalTeardown() {
  for (const dir of [globalThis.__cudaenvTestHome, globalThis.__cudaenvTestScratch]) {
    if (dir) rmSync(dir, {recursive: true, force: true});
  }
}
