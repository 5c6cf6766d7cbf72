import {execFileSync, spawnSync} from 'node:child_process';
import {chmodSync, closeSync, copyFileSync, mkdirSync, openSync, readFileSync, writeFileSync} from 'node:fs';

let inputs = 0;
import {join} from 'node:path';
import {pathsFor, type StorePaths} from '../../../src/core/store/paths.js';
import {afterVersionsChanged} from '../../../src/core/toolkits/on-change.js';
import {ensureStoreDirs} from '../../../src/core/store/registry.js';
import {CLI, cliEnv} from '../../helpers/cli.js';
import {rcLine} from '../../../src/core/shell/shell.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {makeTempDir} from '../../helpers/tmp.js';

export type ShellName = 'bash' | 'zsh' | 'fish';

export function have(program: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;
}

/** A store with installed (real-directory) fake toolkits, and its derived state built. */
export async function makeStore(root: string, labels: string[]): Promise<StorePaths> {
  const paths = pathsFor(root);
  ensureStoreDirs(paths);
  for (const label of labels) makeFakeToolkit(join(paths.versions, label), {version: label, programs: ['ptxas']});
  await afterVersionsChanged(paths);
  return paths;
}

/**
 * A wrapper for the CLI that logs every invocation, so tests can count the Node.js processes
 * the shell started (the hook must start none for a cached switch).
 */
export function loggingCli(dir: string): {bin: string; log: string} {
  const log = join(dir, 'cli-calls.log');
  const bin = join(dir, 'cudaenv-logged');
  writeFileSync(log, '');
  writeFileSync(bin, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${process.execPath}' '${CLI}' "$@"\n`);
  chmodSync(bin, 0o755);
  return {bin, log};
}

export function cliCalls(log: string): string[] {
  return readFileSync(log, 'utf8').split('\n').filter(Boolean);
}

/**
 * The rc file of an interactive shell: the README's line (the start file `cudaenv init` writes into
 * the store, or `cudaenv init` where there is none yet), a quiet prompt, and optionally a logged CLI.
 * Like a user's shells, only the first shell of a store starts Node.js for init.
 */
export function writeRc(shell: ShellName, home: string, options: {bin?: string; before?: string} = {}): Record<string, string> {
  const line = rcLine(shell).replace(`cudaenv init ${shell}`, `${process.execPath} ${CLI} init ${shell}`);
  if (shell === 'bash') {
    const rc = join(home, '.bashrc');
    writeFileSync(rc, `${options.before ?? ''}\nPS1='$ '\n${line}\n${options.bin ? `_CUDAENV_BIN='${options.bin}'\n` : ''}`);
    return {};
  }
  if (shell === 'zsh') {
    writeFileSync(join(home, '.zshrc'), `${options.before ?? ''}\nPS1='%% '\nunsetopt zle\n${line}\n${options.bin ? `_CUDAENV_BIN='${options.bin}'\n` : ''}`);
    return {ZDOTDIR: home};
  }
  const conf = join(home, '.config', 'fish');
  mkdirSync(conf, {recursive: true});
  quietFishHome(home);
  writeFileSync(join(conf, 'config.fish'), `${options.before ?? ''}
function fish_prompt; echo -n '> '; end
function fish_title; end
function fish_greeting; end
${line}
${options.bin ? `set -g _CUDAENV_BIN '${options.bin}'\n` : ''}`);
  return {XDG_CONFIG_HOME: join(home, '.config')};
}

/**
 * An interactive fish whose data directory lacks generated_completions starts a disowned python
 * that parses every man page into it (fish 3.x, __fish_config_interactive): it outlives the test,
 * writes into the home while it is removed, and is a process the strace test would see.
 * Users' homes have the directory after their first fish; so does the test's.
 */
export function quietFishHome(home: string): void {
  mkdirSync(join(home, '.local', 'share', 'fish', 'generated_completions'), {recursive: true});
}

export function shellArgs(shell: ShellName, home: string): string[] {
  if (shell === 'bash') return ['--rcfile', join(home, '.bashrc'), '-i'];
  if (shell === 'zsh') return ['-i'];
  return ['-i'];
}

export interface ShellRun {
  stdout: string;
  stderr: string;
  status: number;
}

/**
 * Runs an interactive shell with its input on a pipe, one command line per element. `wrapper`
 * is a command the shell runs under (its argv before the shell's: `unshare -m ...`).
 */
export function runInteractive(shell: ShellName, home: string, store: string, lines: string[], env: NodeJS.ProcessEnv = {}, cwd = home, wrapper: string[] = []): ShellRun {
  const extra = writeRcEnv(shell, home);
  const base = cliEnv(store, {HOME: home, PATH: '/usr/bin:/bin', TERM: 'dumb', ...extra});
  delete base.LD_LIBRARY_PATH;
  delete base.VIRTUAL_ENV;
  delete base.CONDA_PREFIX;
  delete base.PROMPT_COMMAND;
  const full = {...base, ...env};
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete full[k];
  // Input from a file (fish refuses the socket node gives a child as stdin).
  const input = join(home, `.input-${process.pid}-${++inputs}`);
  writeFileSync(input, `${lines.join('\n')}\nexit\n`);
  const fd = openSync(input, 'r');
  try {
    const argv = [...wrapper, shell, ...shellArgs(shell, home)];
    const r = spawnSync(argv[0], argv.slice(1), {cwd, env: full, stdio: [fd, 'pipe', 'pipe'], encoding: 'utf8', timeout: 60000});
    return {stdout: r.stdout, stderr: r.stderr, status: r.status ?? -1};
  } finally {
    closeSync(fd);
  }
}

function writeRcEnv(shell: ShellName, home: string): Record<string, string> {
  if (shell === 'zsh') return {ZDOTDIR: home};
  if (shell === 'fish') return {XDG_CONFIG_HOME: join(home, '.config')};
  return {};
}

/** `env -0` output as a map: what the shell exports. */
export function readSnapshot(file: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const item of readFileSync(file, 'latin1').split('\0')) {
    if (!item) continue;
    const eq = item.indexOf('=');
    map.set(item.slice(0, eq), Buffer.from(item.slice(eq + 1), 'latin1').toString('utf8'));
  }
  return map;
}

export const TRACKED = ['PATH', 'LD_LIBRARY_PATH', 'CUDA_HOME', 'CUDA_PATH', 'CUDAENV_VERSION'] as const;

/** The tracked variables of a snapshot, with undefined for unset. */
export function tracked(file: string): Record<string, string | undefined> {
  const snap = readSnapshot(file);
  return Object.fromEntries(TRACKED.map((k) => [k, snap.get(k)]));
}

/** Export a variable in the shell's own syntax. */
export function exportLine(shell: ShellName, name: string, valueExpr: string): string {
  return shell === 'fish' ? `set -gx ${name} ${valueExpr}` : `export ${name}=${valueExpr}`;
}

/** The directories an old-shell test runs its scenario in, and the old shell itself. */
export interface OldShellFixture {
  tmp: {dir: string; cleanup: () => void};
  store: string;
  home: string;
  proj: string;
  cli: {bin: string; log: string};
  /** A copy of the package's shell with a RUNPATH to the package's own libraries (LD_LIBRARY_PATH would reach the check). */
  shell: string;
}

export async function oldShellFixture(prefix: string, packaged: string, libDir: string): Promise<OldShellFixture> {
  const tmp = makeTempDir(prefix);
  const shell = join(tmp.dir, `old-${packaged.split('/').pop()}`);
  copyFileSync(packaged, shell);
  execFileSync('patchelf', ['--set-rpath', libDir, shell]);
  const store = join(tmp.dir, 'store');
  await makeStore(store, ['11.8.0', '12.4.1']);
  const home = join(tmp.dir, 'home');
  mkdirSync(home);
  const proj = join(tmp.dir, 'proj');
  mkdirSync(proj);
  return {tmp, store, home, proj, cli: loggingCli(tmp.dir), shell};
}
