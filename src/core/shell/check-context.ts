import {accessSync, constants, readFileSync, statSync} from 'node:fs';
import {isFile} from '../fs-kind.js';
import {splitLdLibraryPath} from '../elf/api.js';

/**
 * What decides the result besides the version and LD_LIBRARY_PATH, as the shell hook computes it
 * with builtins (posix.sh and cudaenv.fish, _cudaenv_report). The Python environment the check
 * looks at: VIRTUAL_ENV, CONDA_PREFIX, the first python3 (else python) on PATH (`module load
 * python`, another interpreter first), PYENV_VERSION (`pyenv shell`), PYTHONPATH, and for a pyenv
 * shim the file that picks its version (`pyenv local`/`global`); without them a cached line could
 * describe the torch of another interpreter. And what the loader itself reads: LD_PRELOAD (a
 * preloaded library is bound first), GLIBC_TUNABLES (the static TLS surplus, hwcaps, executable
 * stacks) and LD_BIND_NOW. And the current directory where a relative search entry makes it count.
 */
export function contextKey(env: NodeJS.ProcessEnv): string {
  const py = pythonOnPath(env.PATH);
  return [
    env.VIRTUAL_ENV ?? '', env.CONDA_PREFIX ?? '', py, env.PYENV_VERSION ?? '', env.PYTHONPATH ?? '', pyenvChoice(py, env),
    env.LD_PRELOAD ?? '', env.GLIBC_TUNABLES ?? '', env.LD_BIND_NOW ?? '', relativeTo(py, env),
  ].join('|');
}

/**
 * The directory the check ran in, when the result depends on it: an LD_LIBRARY_PATH entry that is
 * empty or relative (`export LD_LIBRARY_PATH=/x:$LD_LIBRARY_PATH` with nothing before leaves a
 * trailing ':', which ld.so reads as the current directory), or a python found through such a PATH
 * entry. Else '' (the same line serves every directory).
 */
function relativeTo(py: string, env: NodeJS.ProcessEnv): string {
  const relative = splitLdLibraryPath(env.LD_LIBRARY_PATH).some((e) => !e.startsWith('/')) || (py !== '' && !py.startsWith('/'));
  return relative ? logicalCwd(env) : '';
}

/**
 * For a pyenv shim without PYENV_VERSION: the file that picks the version it runs (the nearest
 * .python-version at or above the current directory, else $PYENV_ROOT/version, as pyenv looks)
 * and its first line, as the hook reads them. '' for any other interpreter.
 */
function pyenvChoice(py: string, env: NodeJS.ProcessEnv): string {
  const root = env.PYENV_ROOT || `${env.HOME ?? ''}/.pyenv`;
  if (env.PYENV_VERSION || !py.startsWith(`${root}/shims/`)) return '';
  let dir = logicalCwd(env).replace(/\/$/, '');
  let file = '';
  for (;;) {
    if (isFile(`${dir}/.python-version`)) {
      file = `${dir}/.python-version`;
      break;
    }
    if (dir === '') break;
    dir = dir.slice(0, dir.lastIndexOf('/'));
  }
  if (file === '') file = `${root}/version`;
  let first = '';
  try {
    first = readFileSync(file, 'latin1').split('\n')[0]!;
  } catch {
    // no file: pyenv's `system`
  }
  return `${file}:${first}`;
}

/** $PWD as the shell keeps it (through links), when it is this directory; else the physical one. */
function logicalCwd(env: NodeJS.ProcessEnv): string {
  const cwd = process.cwd();
  if (!env.PWD?.startsWith('/')) return cwd;
  try {
    const [a, b] = [statSync(env.PWD), statSync(cwd)];
    return a.dev === b.dev && a.ino === b.ino ? env.PWD : cwd;
  } catch {
    return cwd;
  }
}

/**
 * The first python3, else python, of each PATH entry in turn (an empty entry is `.`), spelt as
 * the hook spells it ("$dir/python3"): a regular file this user may execute. '' when none. Not
 * firstOnPath (system/python-env.ts), which skips empty entries and normalises the path: the key
 * must be the hook's string exactly.
 */
function pythonOnPath(pathValue: string | undefined): string {
  if (!pathValue) return '';
  for (const entry of pathValue.split(':')) {
    const dir = entry === '' ? '.' : entry;
    for (const name of ['python3', 'python']) {
      const candidate = `${dir}/${name}`;
      if (isFile(candidate) && executable(candidate)) return candidate;
    }
  }
  return '';
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
