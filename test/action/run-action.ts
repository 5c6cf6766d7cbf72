import {spawn} from 'node:child_process';
import {createRequire} from 'node:module';
import {mkdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BUNDLE = join(REPO, 'dist-action', 'index.mjs');

// js-yaml comes with jest; the action's inputs and their defaults are read from action.yml itself.
const yaml = createRequire(import.meta.url)('js-yaml') as {load(text: string): unknown};
interface ActionYml {
  inputs: Record<string, {default?: string}>;
  outputs: Record<string, unknown>;
  runs: {using: string; main: string};
}
export const ACTION = yaml.load(readFileSync(join(REPO, 'action.yml'), 'utf8')) as ActionYml;

export interface Runner {
  /** RUNNER_TOOL_CACHE: kept between runs on a self-hosted runner. */
  toolCache: string;
  workspace: string;
  /**
   * RUNNER_TEMP: one path for every job of a runner image (/home/runner/work/_temp on GitHub's),
   * emptied before each job. The Actions cache's entry version hashes the cached path, so
   * "another runner of the same image" shares this path and nothing else.
   */
  temp: string;
  /** One directory per job under it (the GITHUB_* files). */
  jobs: string;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  temp: string;
  /** Raw contents of the files the runner gave the step. */
  files: {env: string; path: string; output: string; summary: string; state: string};
}

/**
 * A runner with its own tool cache. Given `image`, another runner of the same image: the same
 * RUNNER_TEMP and GITHUB_WORKSPACE paths (as on GitHub's runners, where @actions/cache keeps paths
 * relative to the workspace and hashes them into the entry's version), but an empty tool cache.
 */
export function makeRunner(root: string, image?: Runner): Runner {
  const r = {toolCache: join(root, 'toolcache'), workspace: image?.workspace ?? join(root, 'workspace'), temp: image?.temp ?? join(root, '_temp'), jobs: join(root, 'jobs')};
  for (const d of Object.values(r)) mkdirSync(d, {recursive: true});
  return r;
}

let jobCount = 0;

/**
 * Runs the bundled entry point as the runner does: `node <main>` from action.yml with an
 * INPUT_<NAME> variable for every input (the default where the step gives none; the name
 * upper-cased, dashes kept), a fresh RUNNER_TEMP and fresh GITHUB_ENV/PATH/OUTPUT/STEP_SUMMARY
 * files, and no other variables from this process but PATH.
 */
export function runAction(runner: Runner, inputs: Record<string, string>, extraEnv: Record<string, string> = {}): Promise<RunResult> {
  const job = join(runner.jobs, `job-${++jobCount}`);
  mkdirSync(job, {recursive: true});
  const temp = runner.temp;
  rmSync(temp, {recursive: true, force: true});
  mkdirSync(temp, {recursive: true});
  const file = (name: string): string => {
    const p = join(job, name);
    writeFileSync(p, '');
    return p;
  };
  const files = {env: file('env'), path: file('path'), output: file('output'), summary: file('summary'), state: file('state')};
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: job,
    RUNNER_TOOL_CACHE: runner.toolCache,
    RUNNER_TEMP: temp,
    GITHUB_WORKSPACE: runner.workspace,
    GITHUB_ENV: files.env,
    GITHUB_PATH: files.path,
    GITHUB_OUTPUT: files.output,
    GITHUB_STEP_SUMMARY: files.summary,
    GITHUB_STATE: files.state,
    GITHUB_ACTIONS: 'true',
    CI: 'true',
  };
  for (const [name, spec] of Object.entries(ACTION.inputs)) {
    const value = inputs[name] ?? spec.default ?? '';
    env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = value;
  }
  for (const name of Object.keys(inputs)) {
    if (!(name in ACTION.inputs)) throw new Error(`action.yml has no input ${name}`);
  }
  Object.assign(env, extraEnv);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO, ACTION.runs.main)], {cwd: runner.workspace, env, stdio: ['ignore', 'pipe', 'pipe']});
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const read = (p: string): string => readFileSync(p, 'utf8');
      resolve({code, stdout, stderr, temp, files: {env: read(files.env), path: read(files.path), output: read(files.output), summary: read(files.summary), state: read(files.state)}});
    });
  });
}

/**
 * Parses a GITHUB_ENV / GITHUB_OUTPUT file as the runner does, insisting on the multiline-safe
 * form (`NAME<<DELIMITER`, value lines, `DELIMITER`) with a delimiter that the value does not hold.
 */
export function parseCommandFile(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const m = /^([A-Za-z_][A-Za-z0-9_-]*)<<(.+)$/.exec(lines[i]!);
    if (!m) throw new Error(`line ${i + 1} is not NAME<<DELIMITER: ${JSON.stringify(lines[i])}`);
    const [, name, delimiter] = m as unknown as [string, string, string];
    const value: string[] = [];
    for (i++; i < lines.length && lines[i] !== delimiter; i++) value.push(lines[i]!);
    if (i >= lines.length) throw new Error(`${name}: the delimiter ${delimiter} never closes`);
    if (value.some((v) => v.includes(delimiter))) throw new Error(`${name}: the value holds its delimiter`);
    out.set(name!, value.join('\n'));
  }
  return out;
}
