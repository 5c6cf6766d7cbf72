/**
 * Running the CLI as user nobody (root ignores file modes, so permission tests drop to nobody
 * with util-linux's setpriv). nobody must be able to reach the CLI's files: a clone under a
 * directory it cannot enter (a 0700 temporary directory, a 0750 home) would fail with "Cannot
 * find module .../bin/run.cjs", so the CLI then runs from a copy nobody can read.
 */
import {spawnSync} from 'node:child_process';
import {chmodSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {CLI, REPO_ROOT, type CliResult} from './cli.js';

export const NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
const isRoot = process.getuid?.() === 0;
const hasSetpriv = spawnSync('sh', ['-c', 'command -v setpriv || test -x /usr/sbin/setpriv || test -x /sbin/setpriv']).status === 0;
/** Dropping to `nobody` needs root and util-linux's setpriv. */
export const canDropToNobody = isRoot && hasSetpriv;

/** What running the CLI reads: the launcher, the build, the shims, the packages and the manifest. */
const RUNTIME = ['bin', 'dist', 'shims', 'node_modules', 'package.json', 'oclif.manifest.json'];

let cli: string | undefined;

/**
 * The CLI's entry as nobody can run it: the clone's own when nobody reaches it, else a copy of
 * what it runs in a directory of its own under the run's scratch directory (hard links where the
 * file system allows, so the copy costs little), removed at the end of the run.
 */
export function cliForNobody(): string {
  if (cli !== undefined) return cli;
  if (spawnSync(NOBODY[0]!, [...NOBODY.slice(1), process.execPath, CLI, '--version']).status === 0) return (cli = CLI);
  // Under the run's scratch directory (test/helpers/global-setup.mjs), which the teardown removes:
  // Jest ends its workers without running their exit handlers.
  const scratch = process.env.JEST_CUDAENV_SCRATCH;
  const dir = mkdtempSync(join(scratch ?? tmpdir(), 'cudaenv-nobody-cli-'));
  chmodSync(dir, 0o755);
  if (scratch === undefined) process.on('exit', () => rmSync(dir, {recursive: true, force: true}));
  const paths = RUNTIME.map((name) => join(REPO_ROOT, name));
  const copy = (flags: string) => spawnSync('cp', [flags, ...paths, dir], {encoding: 'utf8'});
  const linked = copy('-al');
  if (linked.status !== 0) {
    const copied = copy('-a');
    if (copied.status !== 0) throw new Error(`cannot copy the CLI where user nobody can read it (${dir}): ${copied.stderr}`);
  }
  cli = join(dir, 'bin', 'run.cjs');
  const check = spawnSync(NOBODY[0]!, [...NOBODY.slice(1), process.execPath, cli, '--version'], {encoding: 'utf8'});
  if (check.status !== 0) throw new Error(`user nobody cannot run the CLI copied to ${dir}: ${check.stderr}`);
  return cli;
}

/** The built CLI as user nobody (the directories it needs must be readable/writable by it). */
export function runCliAsNobody(args: string[], env: NodeJS.ProcessEnv, cwd?: string): CliResult {
  const r = spawnSync(NOBODY[0]!, [...NOBODY.slice(1), process.execPath, cliForNobody(), ...args], {env, cwd, encoding: 'utf8', timeout: 120000});
  return {status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr};
}
