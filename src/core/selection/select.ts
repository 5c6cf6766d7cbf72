import {statSync} from 'node:fs';
import {isAbsolute, join} from 'node:path';
import {CudaenvError} from '../errors.js';
import type {StorePaths} from '../store/paths.js';
import {readEffectiveGlobal} from '../store/registry.js';
import {resolveSpec, type Resolved} from './resolve.js';
import {parseSpec, prefixedVersionHint, tryParseSpec, type Spec} from '../versions/spec.js';
import {findVersionFile, readVersionFile} from '../versions/version-file.js';
import {isLabel} from '../versions/version.js';

export type Origin =
  | {kind: 'env'; variable: 'CUDAENV_VERSION'}
  | {kind: 'file'; path: string}
  | {kind: 'global'; path: string}
  | {kind: 'conda'; prefix: string; toolkit: string}
  | {kind: 'default'};

export interface Selection extends Resolved {
  origin: Origin;
  /** The version directory, when installed. */
  path?: string;
  /** `key=value` settings of the `.cuda-version` that chose it. */
  settings: Record<string, string>;
  warnings: string[];
}

export interface SelectOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Which toolkit is active, in precedence order: CUDAENV_VERSION, the nearest `.cuda-version`,
 * the global default, then `system`. Reads a few small files; starts no process.
 */
export function selectVersion(paths: StorePaths, options: SelectOptions = {}): Selection {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? logicalCwd(env);
  const fromEnv = env.CUDAENV_VERSION;
  if (fromEnv !== undefined && fromEnv !== '') {
    const spec = parseSpec(fromEnv, 'CUDAENV_VERSION holds');
    return finish(paths, resolveSpec(paths, spec), {kind: 'env', variable: 'CUDAENV_VERSION'});
  }
  const conda = condaHookToolkit(paths, env);
  if (conda) {
    return finish(paths, resolveSpec(paths, parseSpec(conda.label)), {kind: 'conda', prefix: conda.prefix, toolkit: conda.toolkit});
  }
  const file = findVersionFile(cwd);
  if (file) {
    const parsed = readVersionFile(file);
    return finish(paths, resolveSpec(paths, parsed.spec), {kind: 'file', path: file}, parsed.settings, parsed.warnings);
  }
  const global = readEffectiveGlobal(paths);
  if (global !== undefined) {
    const spec = parseGlobalSpec({...paths, globalFile: global.path}, global.spec);
    return finish(paths, resolveSpec(paths, spec), {kind: 'global', path: global.path});
  }
  return finish(paths, resolveSpec(paths, parseSpec('system')), {kind: 'default'});
}

/**
 * The toolkit an active conda environment's cudaenv hook (`cudaenv conda hook install`) put on
 * PATH: _CUDAENV_CONDA_PATH_ADDED is `<store>/versions/<label>/bin` while the environment is
 * active. Its bin directory comes first on PATH, so it outranks .cuda-version and the global
 * default (CUDAENV_VERSION, set by `cudaenv use` in this shell, still wins: use prepends after
 * it). A value that names no version of this store is ignored, as the shims and the shell
 * hook ignore it.
 */
export function condaHookToolkit(paths: StorePaths, env: NodeJS.ProcessEnv): {label: string; toolkit: string; prefix: string} | undefined {
  const added = env._CUDAENV_CONDA_PATH_ADDED;
  const prefix = env.CONDA_PREFIX;
  if (!added || !prefix) return undefined;
  const base = `${paths.versions}/`;
  if (!added.startsWith(base) || !added.endsWith('/bin')) return undefined;
  const label = added.slice(base.length, -'/bin'.length);
  if (!isLabel(label)) return undefined;
  return {label, toolkit: join(paths.versions, label), prefix};
}

function finish(paths: StorePaths, r: Resolved, origin: Origin, settings: Record<string, string> = {}, warnings: string[] = []): Selection {
  return {...r, origin, settings, warnings, path: r.label ? join(paths.versions, r.label) : undefined};
}

export function describeOrigin(origin: Origin): string {
  switch (origin.kind) {
    case 'env': return 'set by CUDAENV_VERSION';
    case 'file': return `set by ${origin.path}`;
    case 'global': return `set by the global default ${origin.path}`;
    case 'conda': return `set by the conda environment ${origin.prefix} (its cudaenv hook)`;
    case 'default': return 'no version selected';
  }
}

/** The selection, or an error when it names something not installed. `system` is allowed. */
export function requireSelection(paths: StorePaths, options: SelectOptions = {}): Selection {
  const sel = selectVersion(paths, options);
  if (!sel.system && !sel.label) {
    throw new CudaenvError(`CUDA ${sel.spec.text} (${describeOrigin(sel.origin)}) is not installed`, {
      hint: sel.spec.kind === 'alias'
        ? (sel.missingAlias === sel.spec.text ? prefixedVersionHint(sel.spec.text) : undefined) ?? `Create the alias (cudaenv alias ${sel.spec.text} 12.4) or install what it names.`
        : sel.spec.kind === 'label'
          ? `Register the toolkit under that label (cudaenv add DIR --as ${sel.spec.text}), or choose another with \`cudaenv use\`.`
          : `Install it with \`cudaenv install ${sel.spec.text}\`, or choose another with \`cudaenv use\`.`,
      code: 'not-installed',
    });
  }
  return sel;
}

/** The global default's spec; a damaged file is named, with the two commands that repair it. */
export function parseGlobalSpec(paths: StorePaths, text: string): Spec {
  const spec = tryParseSpec(text);
  if (spec) return spec;
  throw new CudaenvError(`the global default in ${paths.globalFile} holds ${JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)}, which is not a CUDA version spec`, {
    hint: 'Set it again with `cudaenv global 12.4`, or remove it with `cudaenv global --unset`.',
    code: 'bad-global',
  });
}

/**
 * The working directory as the shell names it ($PWD, through symlinks), as the shell hook and
 * the shims see it; process.cwd() is the physical path, which would look for .cuda-version
 * files in other parents than they do. $PWD counts only while it names this same directory.
 */
export function logicalCwd(env: NodeJS.ProcessEnv = process.env): string {
  const pwd = env.PWD;
  let physical: string;
  try {
    physical = process.cwd();
  } catch {
    throw new CudaenvError(`the current directory${pwd ? ` ${pwd}` : ''} no longer exists`, {hint: 'Change to an existing directory (cd) and run the command again.', code: 'no-cwd'});
  }
  if (!pwd || pwd === physical || !isAbsolute(pwd)) return physical;
  try {
    const a = statSync(pwd);
    const b = statSync(physical);
    if (a.dev === b.dev && a.ino === b.ino) return pwd;
  } catch {
    // $PWD is stale: fall back to the physical path
  }
  return physical;
}
