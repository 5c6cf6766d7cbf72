import {existsSync, realpathSync, statSync, type Stats} from 'node:fs';
import {startsWith} from '../fs-kind.js';
import {join} from 'node:path';
import {readFileSafely, writeFileSafely} from '../safe-fs/index.js';
import {firstOnPath, inspectPython, PROBED_MODULES, type PythonEnv} from './python-env.js';

/**
 * inspectPython without starting python3 when nothing it depends on changed (issue 42: `check`
 * without PATH started the interpreter on every run, most of its cost). An answer is kept under
 * the interpreter's identity (its real path, device, inode, size and times), the variables and
 * working directory that change sys.path, and the state of every directory on sys.path and the user
 * site (a package installed or removed there changes its directory's mtime); any change asks again.
 * The working directory is sys.path's first entry ('' for `python3 -c`, so python3 is run there and
 * the answer is keyed by it), but there only what `import torch` or `import nvidia` would take is
 * watched (importStamp), not its mtime: an editor's swap file or a build output created there
 * would otherwise ask again at every check. An interpreter that is a script (a pyenv, asdf or mise
 * shim chooses the real one from files and variables of its own) is asked every time.
 */

const FILE = 'python-env.json';
/** 2: the working directory is watched through `imports`, not in `watched` (format 1 is a miss: it is asked again). */
const FORMAT = 2;
const MAX_ENTRIES = 16;
/** The variables that change what python3 -c finds (sys.path, the user site, the prefix). */
const VARS = ['PYTHONPATH', 'PYTHONHOME', 'PYTHONNOUSERSITE', 'PYTHONSAFEPATH', 'PYTHONPLATLIBDIR', 'PYTHONUSERBASE', 'PYTHONSTARTUP', 'HOME', 'VIRTUAL_ENV', 'CONDA_PREFIX'];

interface Entry {
  key: string;
  result: PythonEnv;
  /** Each watched directory with its stamp ('-' when absent). */
  watched: Array<[string, string]>;
  /** The working directory (cwdImports), the suffixes looked for, and its importStamp. */
  imports?: [string, string[], string];
  /** sys.executable and what options.program said of it, when it is the interpreter the key names (its real path). */
  program?: [string, string | null];
}

/** inspectPythonCached's answer: with `program` when options.program was given and its verdict on `executable` is known. */
export type CachedPythonEnv = PythonEnv & {program?: string | null};

function stampOf(st: Stats): string {
  return `${st.dev}:${st.ino}:${st.mtimeMs}:${st.ctimeMs}`;
}

function stamp(path: string): string {
  try {
    return stampOf(statSync(path));
  } catch {
    return '-';
  }
}

/**
 * What the path finder would take from `dir` for the probed modules (PROBED_MODULES), as
 * importlib's FileFinder looks: a directory `torch` (a regular package when it holds a file
 * `__init__` + one of the suffixes, else a namespace portion: which, and the directory's identity,
 * so that one created, removed or replaced is a change) and files `torch` + a suffix
 * (importlib.machinery.all_suffixes(): .py, .pyc, the extension suffixes), for each module.
 * '' when there is none, as in nearly every working directory. Those names are looked up, the
 * directory is not read: the cost does not grow with it.
 */
export function importStamp(dir: string, suffixes: string[]): string {
  // Nearly always nothing is there: existsSync (no Stats object, no exception) rules each name out; only a
  // name that exists is stat'ed. About 0.2-0.3 ms at a check's cold start, mostly the first call's own cost.
  const kind = (path: string): 'd' | 'f' | undefined => {
    if (!existsSync(path)) return undefined;
    const st = statSync(path, {throwIfNoEntry: false});
    return st?.isDirectory() ? 'd' : st?.isFile() ? 'f' : undefined;
  };
  const parts: string[] = [];
  try {
    const prefix = dir.endsWith('/') ? dir : `${dir}/`;
    for (const name of PROBED_MODULES) {
      const base = prefix + name;
      if (kind(base) === 'd') {
        const st = statSync(base);
        parts.push(`${name}/${st.dev}:${st.ino}:${suffixes.filter((s) => kind(`${base}/__init__${s}`) === 'f').join(',')}`);
      }
      for (const s of suffixes) if (kind(base + s) === 'f') parts.push(name + s);
    }
  } catch {
    // unreadable (EACCES, ELOOP): so is it for the interpreter
    return '?';
  }
  return parts.join(' ');
}

/**
 * The entry's key: the interpreter by its real path and identity, the working directory and the
 * variables. Whether it is an ELF binary (a script chooses the real interpreter itself, so its
 * answer is never kept) is asked only before an entry is written: an entry of the same identity
 * was an ELF binary when it was written, and is one still (one stat, no read, on a hit).
 */
function keyFor(python: string, env: NodeJS.ProcessEnv, cwd: string): {key: string; real: string} | undefined {
  let real: string;
  let id: string;
  let size: number;
  try {
    real = realpathSync(python);
    const st = statSync(real);
    id = stampOf(st);
    size = st.size;
  } catch {
    return undefined;
  }
  return {key: JSON.stringify({python, real, id, size, cwd, vars: VARS.map((v) => env[v] ?? null)}), real};
}

/** Is `path` the binary at `real` (the key's interpreter, whose identity the key holds)? */
function isKeyed(path: string, real: string): boolean {
  try {
    return realpathSync(path) === real;
  } catch {
    return false;
  }
}

function load(file: string): Entry[] {
  try {
    const data = JSON.parse(readFileSafely(file, 1 << 20).toString('utf8')) as {format?: unknown; entries?: unknown};
    return data.format === FORMAT && Array.isArray(data.entries) ? data.entries as Entry[] : [];
  } catch {
    return [];
  }
}

function importsUnchanged(imports: Entry['imports']): boolean {
  if (imports === undefined) return true;
  if (!Array.isArray(imports) || imports.length !== 3) return false;
  const [dir, suffixes, was] = imports;
  return typeof dir === 'string' && Array.isArray(suffixes) && suffixes.every((s) => typeof s === 'string') && importStamp(dir, suffixes) === was;
}

/**
 * `program`: a verdict on the interpreter binary that depends on nothing but its file (check-targets.ts
 * passes dynamicProgram, which reads its ELF program headers: 1-2 ms at every check). Asked of
 * sys.executable at a miss when that is the interpreter the key names, and kept in the entry: the key
 * holds that file's identity (device, inode, size, times), so the verdict stands while the entry does.
 */
export function inspectPythonCached(options: {env?: NodeJS.ProcessEnv; python?: string; cwd?: string; cacheDir?: string; program?: (path: string) => string | null}): CachedPythonEnv {
  const env = options.env ?? process.env;
  // The prefix's site-packages are read without a process: nothing to keep.
  const prefix = env.VIRTUAL_ENV || env.CONDA_PREFIX;
  if (!options.cacheDir || (!options.python && !env.PYTHONPATH && prefix)) return inspectPython(options);
  const python = options.python ?? firstOnPath(['python3', 'python'], env.PATH);
  const cwd = options.cwd ?? process.cwd();
  const keyed = python ? keyFor(python, env, cwd) : undefined;
  if (!keyed) return inspectPython(options);
  const {key, real} = keyed;
  const file = join(options.cacheDir, FILE);
  const entries = load(file);
  const hit = entries.find((e) => e.key === key && Array.isArray(e.watched) && e.watched.every(([dir, was]) => stamp(dir) === was) && importsUnchanged(e.imports));
  if (hit) {
    const exe = hit.result.executable;
    // sys.executable may be another name of the binary (python3 -> python3.13): still that one?
    if (!options.program || typeof exe !== 'string' || !isKeyed(exe, real)) return hit.result;
    const [was, verdict] = Array.isArray(hit.program) ? hit.program : [];
    if (was === exe && (verdict === null || typeof verdict === 'string')) return {...hit.result, program: verdict};
    // Written without a verdict (by doctor or the check after a switch): added once.
    hit.program = [exe, options.program(exe)];
    save(file, entries);
    return {...hit.result, program: hit.program[1]};
  }
  if (!startsWith(real, '\x7fELF')) return inspectPython(options);
  // In the working directory the answer is keyed by (inspectPython's default too, said here).
  const result: CachedPythonEnv = inspectPython({...options, python, cwd});
  // An interpreter that did not answer is asked again next time.
  if (!result.watched) return result;
  if (options.program && result.executable && isKeyed(result.executable, real)) result.program = options.program(result.executable);
  const entry: Entry = {
    key, result: {sitePackages: result.sitePackages, executable: result.executable}, watched: result.watched.map((d) => [d, stamp(d)]),
    ...(result.cwdImports ? {imports: [result.cwdImports.dir, result.cwdImports.suffixes, importStamp(result.cwdImports.dir, result.cwdImports.suffixes)]} : {}),
    ...(result.program !== undefined && result.executable ? {program: [result.executable, result.program]} : {}),
  };
  save(file, [entry, ...entries.filter((e) => e.key !== key)]);
  return result;
}

function save(file: string, entries: Entry[]): void {
  try {
    writeFileSafely(file, `${JSON.stringify({format: FORMAT, entries: entries.slice(0, MAX_ENTRIES)})}\n`, {durable: false});
  } catch {
    // a read-only store: python3 is asked next time too
  }
}
