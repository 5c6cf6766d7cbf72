import {readFileSync} from 'node:fs';
import {join} from 'node:path';
import {writeFileSafely} from '../safe-fs/index.js';
import type {StorePaths} from '../store/paths.js';
import {startFileName, type InitOptions, type Shell} from './shell.js';

/**
 * Writes the store's start file for SHELL (shell/init.SHELL) when its content differs. Never
 * fails the caller: in a read-only store (a cluster's shared one), or under sudo (the file
 * would belong to root in the user's store), the rc line keeps falling back to `cudaenv init`.
 * Returns the path written, or undefined.
 */
export function writeStartFile(paths: StorePaths, shell: Shell, options: InitOptions, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (process.getuid?.() === 0 && env.SUDO_USER && env.SUDO_USER !== 'root') return undefined;
  const file = join(paths.root, startFileName(shell.name));
  const text = shell.startFile(options);
  try {
    if (readFileSync(file, 'utf8') === text) return file;
  } catch {
    // missing: write it
  }
  try {
    writeFileSafely(file, text);
    return file;
  } catch {
    return undefined;
  }
}
