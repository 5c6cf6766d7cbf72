import {realpathSync, statSync} from 'node:fs';
import {startsWith} from '../fs-kind.js';
import {join} from 'node:path';
import {readFileSafely, writeFileSafely} from '../safe-fs/index.js';
import {firstOnPath, inspectPython, type PythonEnv} from './python-env.js';

/**
 * inspectPython without starting python3 when nothing it depends on changed (issue 42: `check`
 * without PATH started the interpreter on every run, most of its cost). An answer is kept under
 * the interpreter's identity (its real path, device, inode, size and times), the variables and
 * working directory that change sys.path, and the state of every directory on sys.path and the user
 * site (a package installed or removed there changes its directory's mtime); any change asks again.
 * An interpreter that is a script (a pyenv, asdf or mise shim chooses the real one from files
 * and variables of its own) is asked every time.
 */

const FILE = 'python-env.json';
const FORMAT = 1;
const MAX_ENTRIES = 16;
/** The variables that change what python3 -c finds (sys.path, the user site, the prefix). */
const VARS = ['PYTHONPATH', 'PYTHONHOME', 'PYTHONNOUSERSITE', 'PYTHONSAFEPATH', 'PYTHONPLATLIBDIR', 'PYTHONUSERBASE', 'PYTHONSTARTUP', 'HOME', 'VIRTUAL_ENV', 'CONDA_PREFIX'];

interface Entry {
  key: string;
  result: PythonEnv;
  /** Each watched directory with its stamp ('-' when absent). */
  watched: Array<[string, string]>;
}

function stamp(path: string): string {
  try {
    const st = statSync(path);
    return `${st.dev}:${st.ino}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return '-';
  }
}

function keyFor(python: string, env: NodeJS.ProcessEnv, cwd: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(python);
  } catch {
    return undefined;
  }
  if (!startsWith(real, '\x7fELF')) return undefined;
  return JSON.stringify({python, real, id: stamp(real), size: statSync(real).size, cwd, vars: VARS.map((v) => env[v] ?? null)});
}

function load(file: string): Entry[] {
  try {
    const data = JSON.parse(readFileSafely(file, 1 << 20).toString('utf8')) as {format?: unknown; entries?: unknown};
    return data.format === FORMAT && Array.isArray(data.entries) ? data.entries as Entry[] : [];
  } catch {
    return [];
  }
}

export function inspectPythonCached(options: {env?: NodeJS.ProcessEnv; python?: string; cwd?: string; cacheDir?: string}): PythonEnv {
  const env = options.env ?? process.env;
  // The prefix's site-packages are read without a process: nothing to keep.
  const prefix = env.VIRTUAL_ENV || env.CONDA_PREFIX;
  if (!options.cacheDir || (!options.python && !env.PYTHONPATH && prefix)) return inspectPython(options);
  const python = options.python ?? firstOnPath(['python3', 'python'], env.PATH);
  const cwd = options.cwd ?? process.cwd();
  const key = python ? keyFor(python, env, cwd) : undefined;
  if (!key) return inspectPython(options);
  const file = join(options.cacheDir, FILE);
  const entries = load(file);
  const hit = entries.find((e) => e.key === key && Array.isArray(e.watched) && e.watched.every(([dir, was]) => stamp(dir) === was));
  if (hit) return hit.result;
  const result = inspectPython({...options, python});
  // An interpreter that did not answer is asked again next time.
  if (!result.watched) return result;
  const entry: Entry = {key, result: {sitePackages: result.sitePackages, executable: result.executable}, watched: result.watched.map((d) => [d, stamp(d)])};
  try {
    writeFileSafely(file, `${JSON.stringify({format: FORMAT, entries: [entry, ...entries.filter((e) => e.key !== key)].slice(0, MAX_ENTRIES)})}\n`, {durable: false});
  } catch {
    // a read-only store: python3 is asked next time too
  }
  return result;
}
