import {spawn, spawnSync} from 'node:child_process';
import {existsSync, readFileSync, realpathSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The entry bin/cudaenv starts (bin/run.js runs the same for `./bin/run.js` from a clone). */
export const CLI = join(REPO_ROOT, 'bin', 'run.cjs');

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI (`npm run build` first) as a user would, with a controlled environment. */
export function runCli(args: string[], options: {env?: NodeJS.ProcessEnv; cwd?: string; input?: string} = {}): CliResult {
  if (!existsSync(join(REPO_ROOT, 'dist', 'fast-path.js'))) throw new Error('dist/ is missing: run `npm run build` before the tests');
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: options.env ?? process.env,
    input: options.input,
    encoding: 'utf8',
    timeout: 120000,
  });
  return {status: r.status ?? (r.signal ? 128 : 1), stdout: r.stdout, stderr: r.stderr};
}

/**
 * bin/run.cjs as a shell or user starts it, and whether oclif was loaded (a preloaded probe reads
 * require.cache at exit): the fast path's tests show it skips oclif.
 */
export function runCliProbed(args: string[], env: NodeJS.ProcessEnv, probeDir: string): CliResult & {oclif: boolean} {
  const probe = join(probeDir, 'probe.cjs');
  const out = join(probeDir, 'oclif-loaded.txt');
  writeFileSync(probe, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, String(Object.keys(require.cache).some((k) => k.includes('@oclif')))));\n`);
  const r = spawnSync(process.execPath, ['--require', probe, CLI, ...args], {cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 120000});
  return {status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr, oclif: readFileSync(out, 'utf8') === 'true'};
}

/** bin/run.cjs without its fast path: oclif's execute, as bin/run.cjs calls it (the fast path's tests compare the two). */
export function runCliThroughOclif(args: string[], env: NodeJS.ProcessEnv): CliResult {
  const script = `require(require.resolve('@oclif/core', {paths: [${JSON.stringify(REPO_ROOT)}]}))` +
    `.execute({args: process.argv.slice(1), dir: ${JSON.stringify(join(REPO_ROOT, 'bin', 'run.cjs'))},` +
    ` loadOptions: {root: ${JSON.stringify(REPO_ROOT)}, userPlugins: false}})`;
  const r = spawnSync(process.execPath, ['-e', script, ...args], {cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 120000});
  return {status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr};
}

/**
 * Runs the built CLI without blocking this process: a loopback server the test runs (a
 * mirror) must go on answering while the CLI talks to it.
 */
export function runCliAsync(args: string[], env: NodeJS.ProcessEnv): Promise<{code: number | null; stdout: string; stderr: string}> {
  const child = spawn(process.execPath, [CLI, ...args], {env, stdio: ['ignore', 'pipe', 'pipe']});
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({code, stdout, stderr})));
}

/**
 * Runs the launcher users have on PATH (bin/cudaenv: Node started with the loader's variables and
 * NODE_EXTRA_CA_CERTS moved aside), without blocking this process.
 */
export function runLauncherAsync(args: string[], env: NodeJS.ProcessEnv): Promise<{code: number | null; stdout: string; stderr: string}> {
  const child = spawn(join(REPO_ROOT, 'bin', 'cudaenv'), args, {env, stdio: ['ignore', 'pipe', 'pipe']});
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({code, stdout, stderr})));
}

/** An environment for the CLI with its own store and nothing cudaenv-related inherited. */
export function cliEnv(storeDir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {...process.env, CUDAENV_DIR: storeDir};
  for (const key of Object.keys(env)) if (key.startsWith('CUDAENV_') && key !== 'CUDAENV_DIR') delete env[key];
  delete env.CUDA_HOME;
  delete env.CUDA_PATH;
  delete env.NODE_OPTIONS; // jest's --experimental-vm-modules would print a warning in every run
  delete env.NODE_ENV; // oclif in NODE_ENV=test looks for TypeScript sources: slower, and not what users run
  // As root, `link` keeps its records in a directory of root's (/var/lib/cudaenv) and links only under
  // /usr/local and /opt: the tests keep both in their own temporary directories (docs/security.md).
  env.CUDAENV_STATE_DIR = `${storeDir}.root-state`;
  // Never the machine's /etc/cudaenv/site-dirs (issue 45): a path that does not exist, unless a test names one.
  env.CUDAENV_SITE_DIRS_FILE = `${storeDir}.site-dirs`;
  env.CUDAENV_LINK_PREFIXES = `${realpathSync(tmpdir())}:${tmpdir()}`;
  return {...env, ...extra};
}

/**
 * Runs `cudaenv ARGS -- sh -c SCRIPT` where the script says `ready`, then on SIGTERM says
 * `got-term` and exits 3; sends cudaenv SIGTERM once the command is ready, and gives what the
 * command printed and cudaenv's exit status. `asUser` prefixes the run (setpriv ... to be nobody), with
 * `cli` an entry that user can read (test/helpers/nobody.ts).
 */
export async function terminateWhenReady(args: string[], env: NodeJS.ProcessEnv, asUser: string[] = [], cli = CLI): Promise<{out: string; code: number | null}> {
  const script = 'trap "echo got-term; exit 3" TERM; echo ready; while :; do sleep 0.05; done';
  const argv = [...asUser, process.execPath, cli, ...args, '--', 'sh', '-c', script];
  const child = spawn(argv[0]!, argv.slice(1), {env});
  let out = '';
  await new Promise<void>((resolve) => child.stdout.on('data', (d) => {
    out += d;
    if (out.includes('ready')) resolve();
  }));
  child.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return {out, code};
}
