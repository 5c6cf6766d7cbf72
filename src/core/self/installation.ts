import {fileURLToPath} from 'node:url';

/**
 * What the single executable (scripts/build-exe.mjs, src/exe/main.ts) tells the rest of cudaenv
 * about itself. Absent when cudaenv runs from the npm package (bin/cudaenv starting Node).
 */
export interface ExeState {
  /** Where the package's files appear to be (src/exe/vfs.ts): <store>/exe/<buildId>. */
  root: string;
  /** `<version>-<first 12 hex digits of the bundle's SHA-256>`: one per build. */
  buildId: string;
  version: string;
  /** The bundled modules oclif loads by path (commands, hooks), by path relative to the package root. */
  modules: Readonly<Record<string, () => Promise<unknown>>>;
}

const KEY = Symbol.for('cudaenv.exe');

export function exeState(): ExeState | undefined {
  return (globalThis as Record<symbol, ExeState | undefined>)[KEY];
}

export function setExeState(state: ExeState): void {
  (globalThis as Record<symbol, ExeState | undefined>)[KEY] = state;
}

/**
 * The command the shell integration runs: the single executable's own path, or the npm
 * package's launcher (bin/cudaenv, which clears the loader's variables before starting Node).
 */
export function cliPath(): string {
  return exeState() ? process.execPath : fileURLToPath(new URL('../../../bin/cudaenv', import.meta.url));
}
