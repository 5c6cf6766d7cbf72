import type {Stats} from 'node:fs';
import {realpathSync, statSync} from 'node:fs';
import {cachedProgramShapeSync} from '../cache/file-cache.js';

const ET_EXEC = 2;
const ET_DYN = 3;

/**
 * The file `path` leads to when it is a dynamically linked program (an ELF executable or PIE with
 * an interpreter), the kind `--exe` models a process of; null for anything else (a wrapper
 * script such as a pyenv shim, a static binary, a library, nothing there).
 */
export function dynamicProgram(path: string): string | null {
  let real: string;
  let st: Stats;
  try {
    real = realpathSync.native(path);
    st = statSync(real);
  } catch {
    return null;
  }
  if (!st.isFile() || st.size === 0) return null;
  try {
    const info = cachedProgramShapeSync(real, st);
    return (info.type === ET_EXEC || info.type === ET_DYN) && info.interp !== null && info.dynamic === 'yes' ? real : null;
  } catch {
    return null;
  }
}
