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
  /**
   * When the interpreter was asked and its sys.path began with '' (`python3 -c` puts the directory it
   * runs in first: the working directory): that directory, and the suffixes a module file may have
   * (importlib.machinery.all_suffixes()). Of its entries only those `import torch` or `import nvidia`
   * would take decide the answer (importStamp in python-env-cache.ts), not every file created there.
   */
  cwdImports?: {dir: string; suffixes: string[]};
}

/** The top-level modules FIND_PACKAGES_PY asks about: where they are found is the answer. */
export const PROBED_MODULES = ['torch', 'nvidia'] as const;

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
    // Run in the working directory the answer is for: `python3 -c` puts it first on sys.path (''), where
    // a torch/ or torch.py shadows the installed torch (python-env-cache.ts keys the answer by it).
    const cwd = options.cwd ?? process.cwd();
    const out = process.getBuiltinModule('node:child_process').execFileSync(python, ['-c', FIND_PACKAGES_PY], {
      encoding: 'utf8', timeout: 20000, stdio: ['ignore', 'pipe', 'ignore'], env: {...env, PYTHONNOUSERSITE: env.PYTHONNOUSERSITE}, cwd,
    });
    const data = JSON.parse(out.trim().split('\n').pop() ?? '{}') as unknown;
    const executable = typeof data === 'object' && data !== null && !Array.isArray(data) ? (data as {executable?: unknown}).executable : undefined;
    // sys.executable is '' (or None) when Python cannot tell.
    return {sitePackages: packageDirsFrom(data, cwd), executable: typeof executable === 'string' && executable.startsWith('/') ? executable : null, ...watchedFrom(data, cwd)};
  } catch {
    return {sitePackages: [], executable: null};
  }
}

/**
 * Prints sys.path, sys.executable, the module suffixes and the directories `torch` and `nvidia` would be
 * imported from; imports neither. Its own modules are imported without sys.path's '' (the working
 * directory): a json.py or re.py there cannot change or break the answer, which then depends on the
 * working directory only through what `import torch` and `import nvidia` would take from it.
 */
const FIND_PACKAGES_PY = `
import sys
_path = sys.path[:]
sys.path[:] = [p for p in _path if p != ""]
import json, os, importlib.util, importlib.machinery
sys.path[:] = _path
out = {"path": [p for p in sys.path if isinstance(p, str)], "executable": sys.executable, "torch": None, "nvidia": [], "usersite": None, "suffixes": importlib.machinery.all_suffixes()}
try:
    import site
    out["usersite"] = site.getusersitepackages() if site.ENABLE_USER_SITE else None
except Exception:
    pass
try:
    s = importlib.util.find_spec("torch")
    if s is not None and s.origin:
        d = os.path.dirname(os.path.abspath(s.origin))
        # a package's origin is torch/__init__.py; a module (torch.py) lies in the directory itself
        out["torch"] = os.path.dirname(d) if s.submodule_search_locations is not None else d
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

/**
 * sys.path's directories and the user site, which may not exist yet; sys.path's '' (the working
 * directory) apart, as cwdImports, when the interpreter said its module suffixes (else watched too).
 */
function watchedFrom(data: unknown, cwd: string): Pick<PythonEnv, 'watched' | 'cwdImports'> {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return {watched: []};
  const d = data as {path?: unknown; usersite?: unknown; suffixes?: unknown};
  const path = Array.isArray(d.path) ? d.path.filter((e): e is string => typeof e === 'string') : [];
  const suffixes = Array.isArray(d.suffixes) && d.suffixes.length > 0 && d.suffixes.every((e) => typeof e === 'string' && e.startsWith('.') && !e.includes('/'))
    ? d.suffixes as string[] : undefined;
  const cwdImports = path.includes('') && suffixes && cwd.startsWith('/') ? {dir: cwd, suffixes} : undefined;
  const dirs = path.flatMap((e) => (e !== '' ? [e] : cwdImports ? [] : [cwd])).filter((e) => e.startsWith('/'));
  if (typeof d.usersite === 'string' && d.usersite.startsWith('/')) dirs.push(d.usersite);
  return {watched: [...new Set(dirs)], ...(cwdImports ? {cwdImports} : {})};
}

/**
 * The package directories to look in: where torch and nvidia are, then the other site-packages, in
 * sys.path's order ('' is `cwd`, the directory the interpreter ran in, when known).
 */
export function packageDirsFrom(data: unknown, cwd?: string): string[] {
  // A bare list is sys.path alone (what this asked before find_spec): its site-packages then.
  if (Array.isArray(data)) data = {path: data};
  if (typeof data !== 'object' || data === null) return [];
  const d = data as {path?: unknown; torch?: unknown; nvidia?: unknown};
  const path = Array.isArray(d.path) ? d.path.filter((e): e is string => typeof e === 'string') : [];
  const found = [...(typeof d.torch === 'string' ? [d.torch] : []), ...(Array.isArray(d.nvidia) ? d.nvidia.filter((e): e is string => typeof e === 'string') : [])];
  const site = path.filter((e) => /(site|dist)-packages\/?$/.test(e));
  const rank = (dir: string): number => {
    const i = path.findIndex((e) => (e === '' ? cwd : e.replace(/\/+$/, '')) === dir);
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

