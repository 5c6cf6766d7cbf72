import type {StorePaths} from '../store/paths.js';
import {writeShims} from './shims.js';
import {needsRehash, writeSwitchIndex} from './switch-index.js';

export interface RehashResult {
  programs: string[];
  written: string[];
  removed: string[];
}

/** What depends on the set of versions on the shell side: the hook's index and the shims. */
export function rehash(paths: StorePaths): RehashResult {
  writeSwitchIndex(paths);
  return writeShims(paths);
}

/** For stores made before the shell integration existed: build the index once. */
export function rehashIfMissing(paths: StorePaths): void {
  if (needsRehash(paths)) rehash(paths);
}
