import {writeFileSafely} from '../safe-fs/index.js';

/**
 * V8's compiled code of the start-up bundle, kept by bin/run.cjs in the store's cache/node/ (see the
 * launcher for when, and docs/security.md): compiled after the command ran, so it holds every
 * function the command compiled on the way, not only the bundle's top level (a first check of 473
 * libraries compiled a tenth of its time; Node's own compile cache, >= 22.1, keeps the top level).
 * The file is written through safe-fs as every file cudaenv writes; a cache, so not fsync'ed.
 */
export function keepCompiledBundle(path: string, content: Uint8Array): void {
  writeFileSafely(path, content, {durable: false, mode: 0o644});
}
