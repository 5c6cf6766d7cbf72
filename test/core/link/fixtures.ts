import {spawnSync} from 'node:child_process';
import {chmodSync, mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, type CliResult} from '../../helpers/cli.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {pathsFor, type StorePaths} from '../../../src/core/store/paths.js';

/** A store with installed (real directory) toolkits for `labels`. */
export function makeStore(root: string, labels: string[]): StorePaths {
  const paths = pathsFor(root);
  for (const label of labels) makeFakeToolkit(join(paths.versions, label), {version: label});
  return paths;
}

export const isRoot = process.getuid?.() === 0;
export const hasTool = (name: string) => spawnSync('sh', ['-c', `command -v ${name} || test -x /usr/sbin/${name} || test -x /sbin/${name}`]).status === 0;
/** Dropping to `nobody` needs root and util-linux's setpriv. */
export const canDropToNobody = isRoot && hasTool('setpriv');
export const NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];

/** The built CLI as user nobody (the directories it needs must be readable/writable by it). */
export function runCliAsNobody(args: string[], env: NodeJS.ProcessEnv, cwd?: string): CliResult {
  const r = spawnSync(NOBODY[0], [...NOBODY.slice(1), process.execPath, CLI, ...args], {env, cwd, encoding: 'utf8', timeout: 120000});
  return {status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr};
}

/** A real shared library with the given soname, built with gcc. */
export function buildLibrary(dir: string, soname: string): string {
  mkdirSync(dir, {recursive: true});
  const src = join(dir, `${soname}.c`);
  writeFileSync(src, `int ${soname.replace(/\W/g, '_')}_fn(void) { return 1; }\n`);
  const out = join(dir, soname);
  const r = spawnSync('gcc', ['-shared', '-fPIC', `-Wl,-soname,${soname}`, '-o', out, src], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`gcc failed: ${r.stderr}`);
  return out;
}

/** Opens a temporary tree to other users (mkdtemp makes it 0700). */
export function openUp(dir: string): void {
  chmodSync(dir, 0o755);
}
