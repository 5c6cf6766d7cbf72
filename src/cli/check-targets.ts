/**
 * What `cudaenv check` looks at when it is not told everything: the active (or --cuda) toolkit
 * without PATH, and the active Python environment's CUDA libraries. Shared by the oclif command
 * (src/commands/check.ts) and the start-up fast path (src/fast-path.ts), so the two cannot drift.
 */
import {existsSync} from 'node:fs';
import {basename, join} from 'node:path';
import {UsageError} from '../core/errors.js';
import {startsWith} from '../core/fs-kind.js';
import type {StorePaths} from '../core/store/paths.js';
import type {LdLibraryPathPolicy} from '../core/shell/toolkit-env.js';

export interface CheckChoice {
  targets: string[];
  /** --exe, or for a Python shim the interpreter it runs here (resolveExe). */
  exe?: string;
  python?: {targets: string[]; exe?: string};
  ldLibraryPath: string | undefined;
  /** The text's first line: what was chosen (only when no PATH was given). */
  heading?: string;
  warnings: string[];
}

export interface CheckRequest {
  paths: string[];
  /** --ld-library-path (undefined: the environment's; '' unset). */
  ldLibraryPath?: string;
  cuda?: string;
  exe?: string;
  /** --no-cache: the Python environment is asked afresh too. */
  cache: boolean;
}

/**
 * `--exe "$(command -v python3)"` on a pyenv, asdf or mise machine names a shell script (a shim) that
 * picks the real interpreter: ask it, as doctor asks the python3 on PATH (sys.executable), and check as
 * that binary loads the libraries. Only a script named python* is run: --exe names the user's own
 * interpreter; any other program that is no ELF binary is left for the check to refuse.
 */
async function resolveExe(exe: string | undefined, env: NodeJS.ProcessEnv, warnings: string[]): Promise<string | undefined> {
  if (exe === undefined || env.CUDAENV_SYSROOT || !/^python[0-9.]*$/.test(basename(exe))) return exe;
  const [{dynamicProgram}, {inspectPython}] = await Promise.all([import('../core/elf/api.js'), import('../core/system/python-env.js')]);
  if (dynamicProgram(exe) !== null || !startsWith(exe, '#!')) return exe;
  const real = inspectPython({env, python: exe}).executable;
  if (!real || dynamicProgram(real) === null) return exe;
  warnings.push(`--exe ${exe} is a script (a pyenv, asdf or mise shim): checked as the interpreter it runs here, ${real}`);
  return real;
}

export async function chooseCheckTargets(store: StorePaths, req: CheckRequest, env: NodeJS.ProcessEnv = process.env): Promise<CheckChoice> {
  let ldLibraryPath = req.ldLibraryPath !== undefined ? req.ldLibraryPath : env.LD_LIBRARY_PATH;
  if (ldLibraryPath === '') ldLibraryPath = undefined;
  const targets = [...req.paths];
  const warnings: string[] = [];
  const exe = await resolveExe(req.exe, env, warnings);
  // Without PATH the check picks what to look at itself: the first line of the text says what it was.
  let toolkitWord: string | undefined;
  if (req.cuda) {
    const [{toolkitEnvironment, toolkitLibDir}, {loadSettings}, {notInstalledError, resolveSpec}, {parseSpec}] = await Promise.all([
      import('../core/shell/toolkit-env.js'), import('../core/store/settings.js'), import('../core/selection/resolve.js'), import('../core/versions/spec.js'),
    ]);
    const r = resolveSpec(store, parseSpec(req.cuda));
    if (!r.system && !r.label) throw notInstalledError(r, '--cuda');
    const dir = r.label ? join(store.versions, r.label) : undefined;
    const policy = ((await loadSettings(store)).get('ldLibraryPath') ?? 'prepend') as LdLibraryPathPolicy;
    const switched = toolkitEnvironment({...env, LD_LIBRARY_PATH: ldLibraryPath}, dir, store.versions, policy);
    ldLibraryPath = switched.LD_LIBRARY_PATH || undefined;
    if (targets.length === 0 && dir) {
      targets.push(toolkitLibDir(dir));
      toolkitWord = `CUDA ${r.label}`;
    // `--cuda system`: the system toolkit, as a `system` selection is checked without flags.
    } else if (targets.length === 0 && r.system && existsSync('/usr/local/cuda')) {
      targets.push(toolkitLibDir('/usr/local/cuda'));
      toolkitWord = 'the system toolkit';
    }
  } else if (targets.length === 0) {
    const [{toolkitLibDir}, {describeOrigin, requireSelection}] = await Promise.all([
      import('../core/shell/toolkit-env.js'), import('../core/selection/select.js'),
    ]);
    const sel = requireSelection(store);
    if (sel.path) {
      targets.push(toolkitLibDir(sel.path));
      toolkitWord = `CUDA ${sel.label} (${describeOrigin(sel.origin)})`;
    } else if (env.CUDA_HOME && existsSync(env.CUDA_HOME)) {
      targets.push(toolkitLibDir(env.CUDA_HOME));
      toolkitWord = 'the toolkit CUDA_HOME names';
    } else if (existsSync('/usr/local/cuda')) {
      targets.push(toolkitLibDir('/usr/local/cuda'));
      toolkitWord = 'the system toolkit';
    }
    if (targets.length === 0) warnings.push(`no cudaenv version is active (${describeOrigin(sel.origin)}) and there is no /usr/local/cuda`);
  }
  // Without PATH, the active Python environment's CUDA libraries too: checked as its interpreter
  // dlopens them (as doctor and the check after a switch do), unless --exe names the program.
  let python: {targets: string[]; exe?: string} | undefined;
  if (req.paths.length === 0) {
    const [{pythonCudaLibDirs, wheelInterpreter}, {inspectPythonCached}, {dynamicProgram}] = await Promise.all([
      import('../core/system/python-env.js'), import('../core/system/python-env-cache.js'), import('../core/elf/api.js'),
    ]);
    // Kept under the interpreter's identity: a check of an unchanged machine starts no python3 (issue 42),
    // nor reads the interpreter's program headers again (dynamicProgram, 1-2 ms: its verdict is kept too).
    const py = inspectPythonCached({env, cacheDir: req.cache ? store.checkCache : undefined, program: dynamicProgram});
    const interpreter = wheelInterpreter(py, env);
    const program = !interpreter ? null : interpreter === py.executable && py.program !== undefined ? py.program : dynamicProgram(interpreter);
    python = {targets: pythonCudaLibDirs(py.sitePackages), ...(program ? {exe: program} : {})};
  }
  if (targets.length === 0 && !python?.targets.length) {
    throw new UsageError('nothing to check', 'Name shared objects or directories (cudaenv check /path/to/lib), or choose a version with `cudaenv use`.');
  }
  const heading = req.paths.length > 0 ? undefined : [
    ...(targets.length > 0 ? [`${toolkitWord ?? 'the toolkit'}: ${targets.join(', ')}`] : []),
    ...(python?.targets.length ? [`the Python environment's CUDA libraries: ${python.targets.length} director${python.targets.length === 1 ? 'y' : 'ies'}${
      req.exe ? '' : python.exe ? `, as ${python.exe} loads them` : ', as `ldd` loads them (no interpreter binary found)'}`] : []),
  ].join('; ');
  return {targets, exe, python, ldLibraryPath, heading: heading ? `checking ${heading}` : undefined, warnings};
}
