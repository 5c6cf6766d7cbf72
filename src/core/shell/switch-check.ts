import {existsSync} from 'node:fs';
import {dirname, join, resolve} from 'node:path';
import type {StorePaths} from '../store/paths.js';
import {installedLabels} from '../store/registry.js';
import {pythonCudaLibDirs, wheelInterpreter} from '../system/python-env.js';
import {inspectPythonCached} from '../system/python-env-cache.js';
import {fingerprint, hookSeesStale, lookupCheck, storeCheck, type CacheKey} from './check-cache.js';
import {contextKey} from './check-context.js';
import {toolkitLibDir} from './toolkit-env.js';
import {DEFAULT_LD_CACHE, splitLdLibraryPath} from '../elf/api.js';

/**
 * The check after every switch (`use`, the auto-switch hook, `exec`): the new version's
 * libraries and the active Python environment's CUDA libraries (torch/lib, nvidia/* /lib),
 * under the LD_LIBRARY_PATH the switch produced. One line; cached per (version,
 * LD_LIBRARY_PATH, Python environment, fingerprint of what was checked).
 */
export interface SwitchCheck {
  label: string;
  line: string;
  cached: boolean;
}

export async function switchCheck(paths: StorePaths, label: string, env: NodeJS.ProcessEnv): Promise<SwitchCheck> {
  const key: CacheKey = {ldLibraryPath: env.LD_LIBRARY_PATH, context: contextKey(env)};
  const hit = lookupCheck(paths, label, key);
  if (hit !== undefined) {
    // Still valid by its fingerprint, yet the shell hook asked (a watched directory is newer
    // than the cache file, e.g. a non-library file was added): rewrite the file, revalidating
    // every entry, so that the hook trusts it again instead of asking at every switch.
    try {
      if (hookSeesStale(paths, label, hit)) storeCheck(paths, label, hit);
    } catch {
      // read-only store
    }
    return {label, line: hit.line, cached: true};
  }

  const versionDir = join(paths.versions, label);
  const py = inspectPythonCached({env, cacheDir: paths.checkCache});
  const pythonDirs = pythonCudaLibDirs(py.sitePackages).filter((d) => existsSync(d));
  const toolkitDirs = [toolkitLibDir(versionDir)].filter((d) => existsSync(d));
  const targets = [...toolkitDirs, ...pythonDirs];
  const {checkWithWheels, dynamicProgram, firstProblemLine, loaderVariables, machineGpuLine} = await import('../elf/index.js');
  // The toolkit's libraries serve any program: checked as `ldd -r` loads them. Python dlopens the
  // wheels' libraries: checked as the interpreter binary does (static TLS, a dlopen's executable
  // stack, the Py* symbols it defines), as doctor checks them. The interpreter is the environment's
  // own (VIRTUAL_ENV/bin/python3: the cache key holds VIRTUAL_ENV and CONDA_PREFIX, as the shell
  // hook sees them), or the one that was asked for the site-packages; none, or a wrapper script no
  // process starts as, leaves them to the `ldd` model. The loader's own variables are the shell's
  // (the cache key holds them too). One report, toolkit first: the line names the first problem that fails.
  const interpreter = wheelInterpreter(py, env);
  const program = pythonDirs.length > 0 && interpreter ? dynamicProgram(interpreter) : null;
  const report = await checkWithWheels(
    {targets: toolkitDirs, ldLibraryPath: env.LD_LIBRARY_PATH, storeVersionsDir: paths.versions, ...loaderVariables(env)},
    {targets: pythonDirs, ...(program ? {exe: program} : {})},
  );
  // What loads may still run nothing on this machine's GPU (issue 33): said only when that fails.
  const summary = (report.ok ? machineGpuLine(report, paths.checkCache, env) : undefined) ?? firstProblemLine(report);
  const line = `cudaenv: CUDA ${label}${pythonDirs.length > 0 ? ' and the Python environment\'s CUDA libraries' : ''}: ${summary}`;

  // What the result depends on: the checked directories, where their dependencies were found,
  // the LD_LIBRARY_PATH directories (a library added there would shadow), and site-packages
  // (pip adds torch or nvidia wheels there).
  const watched = new Set<string>([...targets, ...py.sitePackages]);
  for (const sp of py.sitePackages) if (existsSync(join(sp, 'nvidia'))) watched.add(join(sp, 'nvidia'));
  // Split as ld.so splits it (':' and ';'), or '/a;/b' would watch a directory that does not exist.
  // An empty or relative entry is searched from the current directory (the cache key then holds it).
  for (const dir of splitLdLibraryPath(env.LD_LIBRARY_PATH)) watched.add(resolve(dir === '' ? '.' : dir));
  for (const obj of report.objects) watched.add(dirname(obj.path));
  // ld.so's own configuration: /etc/ld.so.cache (ldconfig after a package adds a directory to
  // ld.so.conf.d finds a library this line called missing, or stops finding one) and
  // /etc/ld.so.preload. ldconfig replaces the cache by a rename, so /etc's mtime tells the hook;
  // the fingerprint names only the ld.so.* entries of /etc (and its subdirectories' names), so
  // another file rewritten in /etc costs one revalidation, not a check.
  watched.add(dirname(DEFAULT_LD_CACHE));
  // A library not found gets, as its fix, a version of the store that has it: a version installed
  // or removed, or a library added to one, changes that line.
  if (report.problems.some((p) => p.kind === 'not-found')) {
    watched.add(paths.versions);
    for (const v of installedLabels(paths)) for (const d of ['lib64', 'lib']) if (existsSync(join(paths.versions, v, d))) watched.add(join(paths.versions, v, d));
  }
  const list = [...watched].sort();
  try {
    storeCheck(paths, label, {...key, watched: list, fingerprint: fingerprint(list), line});
  } catch {
    // A read-only store (a cluster's shared one): the result is reported, just not cached.
  }
  return {label, line, cached: false};
}

/** For `exec`: the check line on stderr; a failing check never stops the command. */
export async function reportSwitchCheck(paths: StorePaths, versionDir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const label = versionDir.split('/').pop()!;
  try {
    process.stderr.write(`${(await switchCheck(paths, label, env)).line}\n`);
  } catch (error) {
    process.stderr.write(`cudaenv: warning: the library check for CUDA ${label} failed: ${(error as Error).message}\n`);
  }
}
