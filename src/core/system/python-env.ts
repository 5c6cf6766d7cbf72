import {execFileSync} from 'node:child_process';
import {readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';

/**
 * The active Python environment's site-packages directories, without importing anything
 * from it: VIRTUAL_ENV or CONDA_PREFIX when set (no process), else what the given
 * interpreter prints for sys.path (one process).
 */
export function findSitePackages(options: {env?: NodeJS.ProcessEnv; python?: string} = {}): string[] {
  const env = options.env ?? process.env;
  if (!options.python) {
    const prefix = env.VIRTUAL_ENV || env.CONDA_PREFIX;
    if (prefix) {
      const found = sitePackagesUnder(prefix);
      if (found.length > 0) return found;
    }
  }
  const python = options.python ?? firstOnPath(['python3', 'python'], env.PATH);
  if (!python) return [];
  try {
    const out = execFileSync(python, ['-c', 'import sys, json; print(json.dumps(sys.path))'], {
      encoding: 'utf8', timeout: 20000, stdio: ['ignore', 'pipe', 'ignore'], env: {...env, PYTHONNOUSERSITE: env.PYTHONNOUSERSITE},
    });
    const entries = JSON.parse(out.trim().split('\n').pop() ?? '[]') as unknown;
    if (!Array.isArray(entries)) return [];
    return entries.filter((e): e is string => typeof e === 'string' && /(site|dist)-packages\/?$/.test(e) && isDir(e));
  } catch {
    return [];
  }
}

/** `<prefix>/lib/python3.*\/site-packages`, as venv and conda lay them out. */
export function sitePackagesUnder(prefix: string): string[] {
  const lib = join(prefix, 'lib');
  let names: string[];
  try {
    names = readdirSync(lib);
  } catch {
    return [];
  }
  return names.filter((n) => /^python3(\.\d+)?t?$/.test(n)).sort()
    .map((n) => join(lib, n, 'site-packages')).filter(isDir);
}

/** The CUDA library directories of pip wheels: `torch/lib` and `nvidia/*\/lib`. */
export function pythonCudaLibDirs(sitePackages: string[]): string[] {
  const dirs: string[] = [];
  for (const sp of sitePackages) {
    const torchLib = join(sp, 'torch', 'lib');
    if (isDir(torchLib)) dirs.push(torchLib);
    let names: string[] = [];
    try {
      names = readdirSync(join(sp, 'nvidia'));
    } catch {
      // no nvidia wheels
    }
    for (const n of names.sort()) {
      const lib = join(sp, 'nvidia', n, 'lib');
      if (isDir(lib)) dirs.push(lib);
    }
  }
  return dirs;
}

export function firstOnPath(names: string[], pathValue: string | undefined): string | undefined {
  for (const dir of (pathValue ?? '').split(':')) {
    if (!dir) continue;
    for (const name of names) {
      const candidate = join(dir, name);
      try {
        const st = statSync(candidate);
        if (st.isFile() && (st.mode & 0o111) !== 0) return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
