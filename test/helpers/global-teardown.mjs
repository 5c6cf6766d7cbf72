import {rmSync} from 'node:fs';

export default function globalTeardown() {
  if (globalThis.__cudaenvTestHome) rmSync(globalThis.__cudaenvTestHome, {recursive: true, force: true});
}
