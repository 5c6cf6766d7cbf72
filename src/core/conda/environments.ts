import {execFileSync} from 'node:child_process';
import {readFileSync, statSync} from 'node:fs';
import {homedir} from 'node:os';
import {basename, dirname, join, resolve} from 'node:path';
import {CudaenvError, UsageError} from '../errors.js';
import {firstOnPath} from '../system/python-env.js';
import {isDir} from '../fs-kind.js';

export interface CondaEnvironment {
  prefix: string;
  /** `base`, the directory name under an `envs/` directory, or null for an environment known only by its path. */
  name: string | null;
}

export type EnvironmentSource = 'conda' | 'environments.txt' | 'none';

export interface EnvironmentList {
  source: EnvironmentSource;
  environments: CondaEnvironment[];
  warnings: string[];
}

/** conda, mamba, micromamba and pixi all keep `conda-meta/` in every environment. */
export function isCondaPrefix(prefix: string): boolean {
  return isDir(join(prefix, 'conda-meta'));
}

/** The name conda shows: `base` for a root install, the directory name for envs/<name>, else none. */
export function environmentName(prefix: string): string | null {
  if (basename(dirname(prefix)) === 'envs') return basename(prefix);
  if (isDir(join(prefix, 'envs')) || isDir(join(prefix, 'condabin'))) return 'base';
  return null;
}

/**
 * The environments conda knows: `conda env list --json` when conda is on PATH, otherwise
 * ~/.conda/environments.txt (which conda and micromamba append every environment they
 * create to). Prefixes that no longer exist are left out.
 */
export function listEnvironments(options: {env?: NodeJS.ProcessEnv} = {}): EnvironmentList {
  const env = options.env ?? process.env;
  const warnings: string[] = [];
  const conda = firstOnPath(['conda'], env.PATH);
  if (conda) {
    try {
      const out = execFileSync(conda, ['env', 'list', '--json'], {encoding: 'utf8', timeout: 60000, env, stdio: ['ignore', 'pipe', 'pipe']});
      const parsed = JSON.parse(out) as {envs?: unknown};
      if (!Array.isArray(parsed.envs)) throw new Error('no "envs" list in its output');
      return {source: 'conda', environments: toEnvironments(parsed.envs.filter((e): e is string => typeof e === 'string')), warnings};
    } catch (error) {
      const detail = (error as {stderr?: string}).stderr?.trim() || (error as Error).message;
      warnings.push(`\`${conda} env list --json\` failed (${detail.split('\n')[0]}); using ~/.conda/environments.txt instead`);
    }
  }
  const file = join(env.HOME || homedir(), '.conda', 'environments.txt');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return {source: 'none', environments: [], warnings};
  }
  const lines = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#') && l.startsWith('/'));
  return {source: 'environments.txt', environments: toEnvironments(lines), warnings};
}

function toEnvironments(prefixes: string[]): CondaEnvironment[] {
  const seen = new Set<string>();
  const out: CondaEnvironment[] = [];
  for (const p of prefixes) {
    const prefix = resolve(p);
    if (seen.has(prefix) || !isDir(prefix)) continue;
    seen.add(prefix);
    out.push({prefix, name: environmentName(prefix)});
  }
  return out;
}

export interface EnvironmentChoice {
  name?: string;
  prefix?: string;
  env?: NodeJS.ProcessEnv;
}

/** The environment a command acts on: -p PREFIX, -n NAME, or the active one (CONDA_PREFIX). */
export function chooseEnvironment(choice: EnvironmentChoice): CondaEnvironment {
  const env = choice.env ?? process.env;
  if (choice.name !== undefined && choice.prefix !== undefined) throw new UsageError('give either -n NAME or -p PREFIX, not both');
  if (choice.prefix !== undefined) return checkedPrefix(resolve(choice.prefix), '-p');
  if (choice.name !== undefined) {
    const name = choice.name;
    if (name === '' || name.includes('/')) throw new UsageError(`-n ${JSON.stringify(name)} is not an environment name`, 'Give a name as `conda env list` shows it, or a path with -p.');
    const list = listEnvironments({env});
    const matches = list.environments.filter((e) => e.name === name);
    if (matches.length === 1) return checkedPrefix(matches[0].prefix, `-n ${name}`);
    const where = list.source === 'conda' ? '`conda env list`' : list.source === 'environments.txt' ? '~/.conda/environments.txt' : 'no list of environments (conda is not on PATH and ~/.conda/environments.txt does not exist)';
    if (matches.length === 0) {
      throw new CudaenvError(`no conda environment named ${name} in ${where}`, {
        hint: 'Give its path instead: -p /path/to/env', code: 'no-environment',
      });
    }
    throw new CudaenvError(`${matches.length} conda environments are named ${name}: ${matches.map((m) => m.prefix).join(', ')}`, {
      hint: 'Choose one with -p PREFIX.', exitCode: 2, code: 'usage',
    });
  }
  const active = env.CONDA_PREFIX;
  if (!active) {
    throw new UsageError('no conda environment is active (CONDA_PREFIX is not set)', 'Activate one first, or name it: -n NAME or -p PREFIX.');
  }
  return checkedPrefix(resolve(active), 'CONDA_PREFIX');
}

function checkedPrefix(prefix: string, from: string): CondaEnvironment {
  if (!isDir(prefix)) {
    throw new CudaenvError(`${prefix} (${from}) is not a directory`, {hint: 'Give the path of a conda environment, as `conda env list` shows it.', code: 'no-environment'});
  }
  if (!isCondaPrefix(prefix)) {
    throw new CudaenvError(`${prefix} (${from}) is not a conda environment: it has no conda-meta/ directory`, {
      hint: 'Give the path of a conda environment, as `conda env list` shows it.', code: 'no-environment',
    });
  }
  return {prefix, name: environmentName(prefix)};
}
