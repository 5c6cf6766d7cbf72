import {accessSync, constants, existsSync, readFileSync, rmSync, statSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {CudaenvError, isErrno} from '../errors.js';
import {quoteSh} from '../text/quote.js';
import {writeFileSafely} from '../safe-fs/index.js';
import {HOOK_MARKER, HOOK_SHELLS, hookFileName, type HookInfo} from './names.js';
import {hookFiles} from './scripts.js';

const DIRS = ['activate.d', 'deactivate.d'] as const;

export function hookDir(prefix: string, dir: 'activate.d' | 'deactivate.d'): string {
  return join(prefix, 'etc', 'conda', dir);
}

/** Every path a hook occupies in an environment, present or not. */
export function hookPaths(prefix: string): string[] {
  return DIRS.flatMap((d) => HOOK_SHELLS.map((s) => join(hookDir(prefix, d), hookFileName(s))));
}

/**
 * Writes the six scripts, each atomically, replacing a previous hook. Writing the
 * deactivate scripts first means a shell never finds an activate script without the
 * deactivate script that undoes it.
 */
export function writeHook(prefix: string, info: HookInfo): string[] {
  const files = hookFiles(info).sort((a, b) => (a.dir === b.dir ? 0 : a.dir === 'deactivate.d' ? -1 : 1));
  const written: string[] = [];
  for (const f of files) {
    const path = join(hookDir(prefix, f.dir), f.name);
    try {
      writeFileSafely(path, f.content, {mode: 0o644});
    } catch (error) {
      throw new CudaenvError(`cannot write ${path}: ${whyNotWritable(path) ?? (error as Error).message}`, {
        hint: 'Check that you own the conda environment (or use one of yours with -p).',
        cause: error,
      });
    }
    written.push(path);
  }
  return written;
}

/**
 * The plain reason a path cannot be written, from its nearest existing directory: Node's recursive
 * mkdir reports a read-only file system as ENOENT, which sends the user looking for a missing file.
 */
function whyNotWritable(path: string): string | undefined {
  let dir = dirname(path);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  try {
    accessSync(dir, constants.W_OK);
    return undefined;
  } catch (error) {
    if (isErrno(error, 'EROFS')) return `${dir} is on a read-only file system`;
    if (isErrno(error, 'EACCES') || isErrno(error, 'EPERM')) return `${dir} is not writable by this user`;
    return undefined;
  }
}

/** Removes the hook's scripts (activate ones first); returns the paths that existed. */
export function removeHook(prefix: string): string[] {
  const removed: string[] = [];
  for (const path of hookPaths(prefix)) {
    try {
      statSync(path);
    } catch {
      continue;
    }
    try {
      rmSync(path, {force: true});
    } catch (error) {
      throw new CudaenvError(`cannot remove ${path}: ${(error as Error).message}`, {hint: 'Check the permissions of the conda environment.'});
    }
    removed.push(path);
  }
  return removed;
}

export interface InstalledHook extends HookInfo {
  /** The activate script `status` read. */
  script: string;
  /** Whether the version directory is still there. */
  toolkitPresent: boolean;
  /** Hook files missing from the set of six (a partly removed hook). */
  missing: string[];
}

/**
 * The hook installed in an environment, read from the marker line of its sh activate
 * script (data, never executed), or undefined when there is none. A marker that does not
 * parse is reported as an error naming the file.
 */
export function readHook(prefix: string): InstalledHook | undefined {
  const script = join(hookDir(prefix, 'activate.d'), hookFileName('sh'));
  let text: string;
  try {
    text = readFileSync(script, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR')) return undefined;
    throw new CudaenvError(`cannot read ${script}: ${(error as Error).message}`);
  }
  const line = text.split('\n').find((l) => l.startsWith(HOOK_MARKER));
  const info = line ? parseInfo(line.slice(HOOK_MARKER.length)) : undefined;
  if (!info) {
    throw new CudaenvError(`${script} is not a hook cudaenv wrote (no valid "${HOOK_MARKER.trim()}" line)`, {
      hint: `Reinstall it with \`cudaenv conda hook install -p ${quoteSh(prefix)}\`, or remove it with \`cudaenv conda hook uninstall -p ${quoteSh(prefix)}\`.`,
      code: 'hook-corrupt',
    });
  }
  let toolkitPresent = false;
  try {
    toolkitPresent = statSync(info.toolkit).isDirectory();
  } catch {
    // gone
  }
  const missing = hookPaths(prefix).filter((p) => {
    try {
      statSync(p);
      return false;
    } catch {
      return true;
    }
  });
  return {...info, script, toolkitPresent, missing};
}

function parseInfo(json: string): HookInfo | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.version !== 'string' || typeof v.toolkit !== 'string') return undefined;
  if (v.ldLibraryPath !== 'prepend' && v.ldLibraryPath !== 'none') return undefined;
  return {version: v.version, toolkit: v.toolkit, ldLibraryPath: v.ldLibraryPath};
}
