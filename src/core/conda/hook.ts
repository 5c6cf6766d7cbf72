import {statSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError, UsageError} from '../errors.js';
import {quoteSh} from '../text/quote.js';
import type {Problem} from '../elf/api.js';
import type {LdLibraryPathPolicy} from '../shell/toolkit-env.js';
import type {StorePaths} from '../store/paths.js';
import {describeOrigin, selectVersion} from '../selection/select.js';
import {notInstalledError, resolveSpec} from '../selection/resolve.js';
import {parseSpec} from '../versions/spec.js';
import {chooseEnvironment, listEnvironments, type CondaEnvironment, type EnvironmentChoice, type EnvironmentSource} from './environments.js';
import {readHook, removeHook, writeHook, type InstalledHook} from './hook-files.js';
import type {HookInfo} from './names.js';
import {checkHook, type HookCheck} from './preflight.js';

export interface InstallRequest extends EnvironmentChoice {
  paths: StorePaths;
  /** The version spec; default: what selection picks for `cwd` (.cuda-version, then the active version). */
  spec?: string;
  cwd?: string;
  /** From --ld-library-path, else the ldLibraryPath setting, else prepend. */
  policy: LdLibraryPathPolicy;
  force: boolean;
}

export interface InstallResult {
  prefix: string;
  name: string | null;
  version: string;
  toolkit: string;
  ldLibraryPath: LdLibraryPathPolicy;
  /** How the version was chosen. */
  chosenBy: string;
  scripts: string[];
  /** The hook this one replaced, if any. */
  replaced: HookInfo | null;
  /** The library check (null under `none`: the hook leaves LD_LIBRARY_PATH alone). */
  check: HookCheck | null;
  /** Why the check could not run (only with --force; without it that is an error). */
  checkError: string | null;
  forced: boolean;
}

/** Which version a hook installs, as a label with its directory in the store. */
function chooseVersion(req: InstallRequest): {label: string; chosenBy: string} {
  if (req.spec !== undefined) {
    const r = resolveSpec(req.paths, parseSpec(req.spec));
    if (r.system) throw new UsageError('`system` is not a cudaenv toolkit: a hook for it would change nothing', 'Give a version (cudaenv conda hook install 12.4), or remove the hook with `cudaenv conda hook uninstall`.');
    if (!r.label) throw notInstalledError(r);
    return {label: r.label, chosenBy: `the argument ${req.spec}`};
  }
  const sel = selectVersion(req.paths, {cwd: req.cwd, env: req.env});
  if (sel.system) {
    throw new UsageError(`no CUDA version is selected here (${describeOrigin(sel.origin)}), so there is nothing to hook`, 'Name one: cudaenv conda hook install 12.4');
  }
  if (!sel.label) throw notInstalledError(sel, describeOrigin(sel.origin));
  return {label: sel.label, chosenBy: describeOrigin(sel.origin)};
}

export async function installHook(req: InstallRequest): Promise<InstallResult> {
  const target: CondaEnvironment = chooseEnvironment(req);
  const {label, chosenBy} = chooseVersion(req);
  const toolkit = join(req.paths.versions, label);
  try {
    if (!statSync(toolkit).isDirectory()) throw new Error('not a directory');
  } catch {
    throw new CudaenvError(`CUDA ${label} has no usable directory at ${toolkit}`, {hint: `Reinstall it (cudaenv install ${label}) or register it again (cudaenv add PATH).`, code: 'not-installed'});
  }
  // A PATH or LD_LIBRARY_PATH entry cannot hold ':' (the separator); a newline would break a
  // csh word. Neither is a path a user means.
  if (/[:\n\r]/.test(toolkit)) {
    throw new CudaenvError(`the toolkit path ${JSON.stringify(toolkit)} contains ':' or a line break, which PATH and LD_LIBRARY_PATH cannot hold`, {
      hint: 'Move the cudaenv store (CUDAENV_DIR) to a path without them.',
    });
  }
  const info: HookInfo = {version: label, toolkit, ldLibraryPath: req.policy};
  let check: InstallResult['check'] = null;
  let checkError: string | null = null;
  if (req.policy === 'prepend') {
    try {
      check = await checkHook({prefix: target.prefix, toolkit, storeVersionsDir: req.paths.versions, env: req.env});
    } catch (error) {
      // The check could not run (an unreadable library, say): never install blind silently.
      const reason = error instanceof Error ? error.message : String(error);
      if (!req.force) {
        throw new CudaenvError(`cannot check the libraries of ${target.prefix} against CUDA ${label}: ${reason}`, {
          hint: 'Install without the check with --force, or with --ld-library-path none (the hook then leaves LD_LIBRARY_PATH alone).',
          code: 'check-failed',
        });
      }
      checkError = reason;
    }
    if (check && check.problems.length > 0 && !req.force) throw refusal(target.prefix, label, check.problems);
  }
  let replaced: HookInfo | null = null;
  try {
    const old = readHook(target.prefix);
    if (old) replaced = {version: old.version, toolkit: old.toolkit, ldLibraryPath: old.ldLibraryPath};
  } catch {
    // an unreadable previous hook is simply replaced
  }
  const scripts = writeHook(target.prefix, info);
  return {
    prefix: target.prefix, name: target.name, ...info, chosenBy, scripts, replaced, check, checkError,
    forced: Boolean(req.force && ((check && check.problems.length > 0) || checkError)),
  };
}

function refusal(prefix: string, label: string, problems: Problem[]): CudaenvError {
  // The summary names the file picked; the shadowed candidate says why that is wrong (the environment's own copy).
  // A summary that names the object by its file name alone (static TLS) gets its path: which copy the hook picks is the point.
  const lines = problems.slice(0, 3).map((p) => `  ${p.summary}${p.shadowed ? `\n    instead of ${p.shadowed}` : p.summary.includes(p.object) ? '' : `\n    (${p.object})`}`);
  if (problems.length > 3) lines.push(`  ... and ${problems.length - 3} more (--json lists them)`);
  // A missing symbol or version is a wrong library bound; anything else (static TLS, an executable stack) a load that fails.
  const wrongLibrary = problems[0]!.kind === 'undefined-symbol' || problems[0]!.kind === 'version-not-found';
  return new CudaenvError(
    `not installing the hook: with CUDA ${label}'s libraries first on LD_LIBRARY_PATH, libraries of the conda environment ${prefix} would ${wrongLibrary ? 'bind a wrong library' : 'fail to load'}:\n${lines.join('\n')}`,
    {
      hint: `Install it without touching LD_LIBRARY_PATH (PATH, CUDA_HOME and CUDA_PATH still switch): cudaenv conda hook install ${label} -p ${quoteSh(prefix)} --ld-library-path none\nOr install it anyway with --force.`,
      code: 'hook-breaks-libraries',
    },
  );
}

export interface UninstallResult {
  prefix: string;
  name: string | null;
  removed: string[];
  /** What the removed hook activated, when it could be read. */
  version: string | null;
}

export function uninstallHook(choice: EnvironmentChoice): UninstallResult {
  const target = chooseEnvironment(choice);
  let version: string | null = null;
  try {
    version = readHook(target.prefix)?.version ?? null;
  } catch {
    // removed all the same
  }
  return {prefix: target.prefix, name: target.name, removed: removeHook(target.prefix), version};
}

export interface HookStatusEntry {
  prefix: string;
  name: string | null;
  active: boolean;
  hook: (Omit<InstalledHook, 'script'> & {script: string}) | null;
  /** Why the hook could not be read. */
  error: string | null;
}

export interface StatusResult {
  source: EnvironmentSource;
  environments: HookStatusEntry[];
  warnings: string[];
}

/**
 * Every known environment with a cudaenv hook (and the active environment, hooked or not,
 * so `status` answers "does this one have a hook?").
 */
export function hookStatus(options: {env?: NodeJS.ProcessEnv} = {}): StatusResult {
  const env = options.env ?? process.env;
  const list = listEnvironments({env});
  const envs = [...list.environments];
  const active = env.CONDA_PREFIX;
  let activePrefix: string | undefined;
  if (active) {
    try {
      activePrefix = chooseEnvironment({env}).prefix;
      if (!envs.some((e) => e.prefix === activePrefix)) envs.push({prefix: activePrefix, name: chooseEnvironment({env}).name});
    } catch {
      // CONDA_PREFIX pointing nowhere: nothing to report for it
    }
  }
  const out: HookStatusEntry[] = [];
  for (const e of envs) {
    let hook: InstalledHook | undefined;
    let error: string | null = null;
    try {
      hook = readHook(e.prefix);
    } catch (err) {
      error = (err as Error).message;
    }
    const isActive = e.prefix === activePrefix;
    if (hook || error || isActive) out.push({prefix: e.prefix, name: e.name, active: isActive, hook: hook ?? null, error});
  }
  return {source: list.source, environments: out, warnings: list.warnings};
}
