import {existsSync} from 'node:fs';
import {dirname, join} from 'node:path';
import type {StorePaths} from '../store/paths.js';
import {findSitePackages, pythonCudaLibDirs} from '../system/python-env.js';
import {fingerprint, hookSeesStale, lookupCheck, pythonKey, storeCheck, type CacheKey} from './check-cache.js';
import {toolkitLibDir} from './toolkit-env.js';
import {splitLdLibraryPath} from '../elf/search-path.js';

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
  const key: CacheKey = {ldLibraryPath: env.LD_LIBRARY_PATH, python: pythonKey(env)};
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
  const sitePackages = findSitePackages({env});
  const pythonDirs = pythonCudaLibDirs(sitePackages);
  const targets = [toolkitLibDir(versionDir), ...pythonDirs].filter((d) => existsSync(d));
  const {checkLibraries, firstProblemLine} = await import('../elf/index.js');
  const report = await checkLibraries({
    targets,
    ldLibraryPath: env.LD_LIBRARY_PATH,
    storeVersionsDir: paths.versions,
  });
  const summary = firstProblemLine(report);
  const line = `cudaenv: CUDA ${label}${pythonDirs.length > 0 ? ' and the Python environment\'s CUDA libraries' : ''}: ${summary}`;

  // What the result depends on: the checked directories, where their dependencies were found,
  // the LD_LIBRARY_PATH directories (a library added there would shadow), and site-packages
  // (pip adds torch or nvidia wheels there).
  const watched = new Set<string>([...targets, ...sitePackages]);
  for (const sp of sitePackages) if (existsSync(join(sp, 'nvidia'))) watched.add(join(sp, 'nvidia'));
  // Split as ld.so splits it (':' and ';'), or '/a;/b' would watch a directory that does not exist.
  for (const dir of splitLdLibraryPath(env.LD_LIBRARY_PATH)) if (dir.startsWith('/')) watched.add(dir);
  for (const obj of report.objects) watched.add(dirname(obj.path));
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
