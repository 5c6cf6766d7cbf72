import {readFileSync} from 'node:fs';
import {fileURLToPath} from 'node:url';
import {isLabel} from '../versions/version.js';

/**
 * One interface for the shells cudaenv integrates with, one implementation per shell
 * (./bash.ts, ./zsh.ts, ./fish.ts), as fnm does. The shell code itself lives in the
 * repository's shims/shell/ (read at run time), so it can be read and tested as shell code.
 */
export interface InitOptions {
  /** The CLI the shell function runs (bin/cudaenv, the launcher of this installation). */
  bin: string;
  /** The store when CUDAENV_DIR is unset in the shell. */
  defaultDir: string;
}

export interface UseOptions {
  /** No line saying what changed (--quiet, or the `quiet` setting). */
  quiet?: boolean;
  /** Printed on stdout after the switch (`use --json` inside the integration). */
  json?: string;
}

export interface Shell {
  readonly name: ShellName;
  /** What `cudaenv init SHELL` prints: the `cudaenv` function and the auto-switch hook. */
  init(options: InitOptions): string;
  /**
   * The start file `cudaenv init SHELL` also writes into the store (shell/init.SHELL): the same
   * settings, then it sources this installation's shims/shell/ files, so the rc line can
   * source it without starting Node.js (see startFileName).
   */
  startFile(options: InitOptions): string;
  /** Code for `cudaenv use`: switch to LABEL (or `system`) with the policy, pinning CUDAENV_VERSION. */
  use(label: string, policy: 'prepend' | 'none', options?: UseOptions): string;
  /** Code for `cudaenv deactivate`. */
  deactivate(options?: UseOptions): string;
  /** One word the shell reads back as exactly `value`. */
  quote(value: string): string;
}

export const SHELL_NAMES = ['bash', 'zsh', 'fish'] as const;
export type ShellName = (typeof SHELL_NAMES)[number];

/** The first line of everything the shell function evaluates; anything else is only printed. */
export const CODE_MARKER = '# cudaenv-shell-code v1';

/** Labels reach shell code only after this check (they are store labels, 12.4.1 or 12.4.1-local, or `system`). */
export function assertLabel(label: string): string {
  if (label !== 'system' && !isLabel(label)) throw new Error(`refusing to emit shell code for version label ${JSON.stringify(label)}`);
  return label;
}

/** A shell script shipped in shims/shell/ (the package's `files` include shims/). */
export function shellScript(name: string): string {
  return readFileSync(shellScriptPath(name), 'utf8');
}

export function shellScriptPath(name: string): string {
  return fileURLToPath(new URL(`../../../shims/shell/${name}`, import.meta.url));
}

/**
 * Where `cudaenv init SHELL` writes the start file, relative to the store. The rc line names
 * this path; its content may change from one cudaenv version to the next (it is rewritten by
 * every `init`), the path may not.
 */
export function startFileName(shell: ShellName): string {
  return `shell/init.${shell}`;
}

/** The one line for the rc file: the start file, else (first time, or cudaenv moved) `init`. */
export function rcLine(shell: ShellName): string {
  return shell === 'fish'
    ? `source (set -q CUDAENV_DIR; and echo $CUDAENV_DIR; or echo ~/.cudaenv)/${startFileName(shell)} 2>/dev/null; or cudaenv init fish | source`
    : `. "\${CUDAENV_DIR:-$HOME/.cudaenv}/${startFileName(shell)}" 2>/dev/null || eval "$(cudaenv init ${shell})"`;
}
