import {CudaenvError, UsageError} from '../errors.js';
import type {StorePaths} from '../store/paths.js';
import {readSettingSync} from '../store/settings.js';
import {notInstalledError, resolveSpec} from '../selection/resolve.js';
import {describeOrigin, logicalCwd, selectVersion} from '../selection/select.js';
import {parseSpec} from '../versions/spec.js';
import {needsRehash} from './switch-index.js';
import {rcLine} from './shell.js';
import {shellFor} from './shells.js';
import {lookupCheckAsHook} from './check-cache.js';
import {contextKey} from './check-context.js';
import type {LdLibraryPathPolicy} from './toolkit-env.js';
import {planSwitch, STATE_VARS as SHELL_STATE_VARS, SWITCHED_VARS} from './transition.js';

/**
 * `cudaenv use`, without oclif (the start-up fast path and the oclif command both call it).
 * Inside the shell integration (CUDAENV_SHELL set by the `cudaenv` shell function) it prints
 * shell code that the function evaluates; with --json there, that code switches and then prints
 * the JSON object with `applied: true`. Outside it, --json prints the change as data a caller
 * can apply (`applied: false`), never a success that did not happen.
 */
export interface UseRequest {
  paths: StorePaths;
  /** The version spec; undefined: what .cuda-version (or the global default) selects. */
  spec?: string;
  /** From --ld-library-path; else the ldLibraryPath setting, else prepend. */
  policy?: LdLibraryPathPolicy;
  quiet: boolean;
  json: boolean;
  env: NodeJS.ProcessEnv;
}

export interface UseJson {
  version: string;
  path: string | null;
  ldLibraryPath: LdLibraryPathPolicy;
  /** Where the version came from: the argument, a .cuda-version, the global default. */
  chosenBy: string;
  check: string | null;
  /** Whether this shell was switched (only inside the shell integration). */
  applied: boolean;
  /** The environment after the switch: set these, unset those (cudaenv's state variables included). */
  environment: {set: Record<string, string>; unset: string[]};
  note: string;
}

/** The variables a switch may change: the toolkit's and cudaenv's state for the next switch or deactivate. */
const STATE_VARS = [...SWITCHED_VARS, ...SHELL_STATE_VARS];

export function integrationMissing(command: string): CudaenvError {
  return new CudaenvError(`\`cudaenv ${command}\` changes your shell, and this shell has no cudaenv integration`, {
    hint: `Add one line to your rc file: bash (~/.bashrc): ${rcLine('bash')}; zsh (~/.zshrc): ${rcLine('zsh')}; fish (config.fish): ${rcLine('fish')}. Or run one command: cudaenv exec --cuda SPEC -- CMD, or apply the environment of \`cudaenv use SPEC --json\` yourself.`,
    code: 'no-shell-integration',
  });
}

/** Which version `use` switches to: the argument, else what the nearest .cuda-version selects. */
function chooseLabel(req: UseRequest): {label: string; chosenBy: string} {
  if (req.spec !== undefined) {
    const r = resolveSpec(req.paths, parseSpec(req.spec));
    if (!r.system && !r.label) throw notInstalledError(r);
    return {label: r.system ? 'system' : r.label!, chosenBy: `the argument ${req.spec}`};
  }
  // As `nvm use` reads .nvmrc: the project's file or the global default, not what this shell
  // pinned before (CUDAENV_VERSION) nor a conda environment's hook.
  const env: NodeJS.ProcessEnv = {...req.env};
  delete env.CUDAENV_VERSION;
  delete env._CUDAENV_CONDA_PATH_ADDED;
  const sel = selectVersion(req.paths, {env});
  // As `nvm use` without an .nvmrc: no project file is an error, global default or not. Pinning
  // the global default here would stop the auto-switch on cd for the rest of the shell, and the
  // global default already applies wherever nothing is pinned (`cudaenv deactivate` returns to it).
  if (sel.origin.kind === 'default') {
    throw new UsageError('no version to use: there is no .cuda-version here or in a parent directory, and no global default',
      'Name one (cudaenv use 12.4), pin this project (cudaenv local 12.4) or set a default (cudaenv global 12.4).');
  }
  if (sel.origin.kind === 'global') {
    const label = sel.system ? 'system' : (sel.label ?? sel.spec.text);
    const shown = sel.spec.text === label ? label : `${sel.spec.text}, now ${label}`;
    throw new UsageError(`no version to use: there is no .cuda-version in ${logicalCwd(env)} or a parent directory`,
      `The global default (${shown}) applies wherever this shell has not pinned a version; \`cudaenv deactivate\` returns this shell to it. ` +
      `\`cudaenv use ${sel.spec.text}\` pins it for this shell (the auto-switch on cd then stops until \`cudaenv deactivate\`); \`cudaenv local 12.4\` pins this project.`);
  }
  const origin = describeOrigin(sel.origin);
  if (!sel.system && !sel.label) throw notInstalledError(sel, origin);
  return {label: sel.system ? 'system' : sel.label!, chosenBy: origin};
}

/** What to write on stdout, and the exit status. */
export async function runUse(req: UseRequest, warn: (message: string) => void): Promise<{stdout: string}> {
  const {label, chosenBy} = chooseLabel(req);
  const shellName = req.env.CUDAENV_SHELL;
  if (!shellName && !req.json) throw integrationMissing('use');
  const policy: LdLibraryPathPolicy = req.policy ?? readSettingSync(req.paths, 'ldLibraryPath') ?? 'prepend';
  const quiet = req.quiet || readSettingSync(req.paths, 'quiet') === true;
  try {
    if (needsRehash(req.paths)) (await import('./rehash.js')).rehashIfMissing(req.paths);
  } catch {
    // A read-only store: the shell then resolves through the CLI (`use`) only.
  }
  const next = planSwitch(req.env, req.paths.root, label, policy, 'pin');
  let check: string | null = null;
  if (label !== 'system') {
    // A result the shell's report will print from its cache (the auto-switch on cd trusts it
    // the same way) is not checked again: `use` stays as quick as `current`.
    check = lookupCheckAsHook(req.paths, label, {ldLibraryPath: next.LD_LIBRARY_PATH, context: contextKey(next)})?.line ?? null;
  }
  if (label !== 'system' && check === null) {
    // Run the check now, under the environment the shell is about to get, so that the
    // shell's report finds it cached and no second process starts.
    try {
      const {switchCheck} = await import('./switch-check.js');
      check = (await switchCheck(req.paths, label, next)).line;
    } catch (error) {
      // The switch itself does not depend on the check; the shell's report retries it.
      warn(`the library check after the switch failed: ${(error as Error).message}`);
    }
  }
  const shell = shellName ? await shellFor(shellName) : undefined;
  const set: Record<string, string> = {};
  const unset: string[] = [];
  for (const v of STATE_VARS) {
    if (next[v] === undefined) {
      if (req.env[v] !== undefined) unset.push(v);
    } else if (next[v] !== req.env[v]) {
      set[v] = next[v]!;
    }
  }
  const json = (applied: boolean): string => `${JSON.stringify({
    version: label,
    path: label === 'system' ? null : `${req.paths.versions}/${label}`,
    ldLibraryPath: policy,
    chosenBy,
    check,
    applied,
    environment: {set, unset},
    note: applied
      ? `this ${shellName} shell was switched to CUDA ${label}; environment lists what changed`
      : 'nothing was switched: a command cannot change the environment of the process that started it. Apply environment yourself (export every variable in set, unset every one in unset), or use the shell integration (cudaenv init), where `cudaenv use` switches the shell',
  } satisfies UseJson, null, 2)}`;
  if (!shell) return {stdout: `${json(false)}\n`};
  return {stdout: shell.use(label, policy, {quiet, json: req.json ? json(true) : undefined})};
}

