import {readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {isDir} from '../fs-kind.js';

/**
 * Where the active Python finds its packages, torch and the nvidia wheels above all, without
 * importing anything. With VIRTUAL_ENV or CONDA_PREFIX set and no PYTHONPATH, their
 * site-packages (no process). Otherwise the interpreter is asked (one process) where `torch`
 * and `nvidia` would be imported from (importlib.util.find_spec, which imports neither): that
 * covers `pip install --target DIR`, PYTHONPATH and .pth entries as well as site-packages.
 */
export function findSitePackages(options: {env?: NodeJS.ProcessEnv; python?: string; cwd?: string} = {}): string[] {
  return inspectPython(options).sitePackages;
}

export interface PythonEnv {
  /** Package directories, as findSitePackages gives them. */
  sitePackages: string[];
  /** The interpreter's sys.executable, when it was run and said it (a pyenv shim names the real binary). */
  executable: string | null;
  /**
   * When the interpreter was asked: the directories whose entries decide the answer (sys.path's and
   * the user site, present or not), for python-env-cache.ts to see when it must ask again.
   */
  watched?: string[];
}

/** findSitePackages, and the interpreter binary itself when the interpreter is asked. */
export function inspectPython(options: {env?: NodeJS.ProcessEnv; python?: string; cwd?: string} = {}): PythonEnv {
  const env = options.env ?? process.env;
  if (!options.python && !env.PYTHONPATH) {
    const prefix = env.VIRTUAL_ENV || env.CONDA_PREFIX;
    if (prefix) {
      const found = sitePackagesUnder(prefix);
      if (found.length > 0) return {sitePackages: found, executable: null};
    }
  }
  const python = options.python ?? firstOnPath(['python3', 'python'], env.PATH);
  if (!python) return {sitePackages: [], executable: null};
  try {
    // node:child_process on first use (the fast path loads this module without running python).
    const out = process.getBuiltinModule('node:child_process').execFileSync(python, ['-c', FIND_PACKAGES_PY], {
      encoding: 'utf8', timeout: 20000, stdio: ['ignore', 'pipe', 'ignore'], env: {...env, PYTHONNOUSERSITE: env.PYTHONNOUSERSITE}, cwd: options.cwd,
    });
    const data = JSON.parse(out.trim().split('\n').pop() ?? '{}') as unknown;
    const executable = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as {executable?: unknown}).executable : undefined;
    // sys.executable is '' (or None) when Python cannot tell.
    return {sitePackages: packageDirsFrom(data), executable: typeof executable === 'string' && executable.startsWith('/') ? executable : null, watched: watchedFrom(data, options.cwd ?? process.cwd())};
  } catch {
    return {sitePackages: [], executable: null};
  }
}

/** Prints sys.path, sys.executable and the directories `torch` and `nvidia` would be imported from; imports neither. */
const FIND_PACKAGES_PY = `
import sys, json, os, importlib.util
out = {"path": [p for p in sys.path if isinstance(p, str)], "executable": sys.executable, "torch": None, "nvidia": [], "usersite": None}
try:
    import site
    out["usersite"] = site.getusersitepackages() if site.ENABLE_USER_SITE else None
except Exception:
    pass
try:
    s = importlib.util.find_spec("torch")
    if s is not None and s.origin:
        out["torch"] = os.path.dirname(os.path.dirname(os.path.abspath(s.origin)))
except Exception:
    pass
try:
    s = importlib.util.find_spec("nvidia")
    if s is not None and s.submodule_search_locations:
        out["nvidia"] = [os.path.dirname(os.path.abspath(p)) for p in s.submodule_search_locations]
except Exception:
    pass
print(json.dumps(out))
`;

/** sys.path's directories ('' is the working directory) and the user site, which may not exist yet. */
function watchedFrom(data: unknown, cwd: string): string[] {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return [];
  const d = data as {path?: unknown; usersite?: unknown};
  const path = Array.isArray(d.path) ? d.path.filter((e): e is string => typeof e === 'string') : [];
  const dirs = path.map((e) => (e === '' ? cwd : e)).filter((e) => e.startsWith('/'));
  if (typeof d.usersite === 'string' && d.usersite.startsWith('/')) dirs.push(d.usersite);
  return [...new Set(dirs)];
}

/** The package directories to look in: where torch and nvidia are, then the other site-packages, in sys.path's order. */
export function packageDirsFrom(data: unknown): string[] {
  // A bare list is sys.path alone (what this asked before find_spec): its site-packages then.
  if (Array.isArray(data)) data = {path: data};
  if (typeof data !== 'object' || data === null) return [];
  const d = data as {path?: unknown; torch?: unknown; nvidia?: unknown};
  const path = Array.isArray(d.path) ? d.path.filter((e): e is string => typeof e === 'string') : [];
  const found = [...(typeof d.torch === 'string' ? [d.torch] : []), ...(Array.isArray(d.nvidia) ? d.nvidia.filter((e): e is string => typeof e === 'string') : [])];
  const site = path.filter((e) => /(site|dist)-packages\/?$/.test(e));
  const rank = (dir: string): number => {
    const i = path.findIndex((e) => e.replace(/\/+$/, '') === dir);
    return i < 0 ? path.length : i;
  };
  const ordered = [...new Set(found)].sort((a, b) => rank(a) - rank(b));
  return [...new Set([...ordered, ...site.map((e) => e.replace(/(.)\/+$/, '$1'))])].filter(isDir);
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

/**
 * The interpreter that loads the environment's wheels, as inspectPython found the environment:
 * the environment's own (VIRTUAL_ENV/bin/python3, CONDA_PREFIX/bin/python3) where its packages
 * were read from the prefix, else the sys.executable of the python3 that was asked; undefined
 * when neither is known. Checked as a program by the loader model when it is one.
 */
export function wheelInterpreter(py: PythonEnv, env: NodeJS.ProcessEnv): string | undefined {
  if (py.executable) return py.executable;
  const prefix = env.VIRTUAL_ENV || env.CONDA_PREFIX;
  return prefix ? firstOnPath(['python3', 'python'], join(prefix, 'bin')) : undefined;
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

