/**
 * What `init SHELL` and `switch-check LABEL` do, for their oclif commands and for the fast path
 * (src/fast-path.ts), which the shells start without oclif. Modules are loaded when called: the fast
 * path imports this file for every command it answers.
 */
import {UsageError} from '../core/errors.js';
import {storePaths, storeRoot} from '../core/store/paths.js';

/** `cudaenv init SHELL`: writes the store's start file and gives the shell code to print. */
export async function initCode(name: string): Promise<string> {
  const [{shellFor}, {writeStartFile}, {cliPath}] = await Promise.all([
    import('../core/shell/shells.js'), import('../core/shell/start-file.js'), import('../core/self/installation.js'),
  ]);
  const shell = await shellFor(name);
  const {CUDAENV_DIR: _ignored, ...withoutDir} = process.env;
  const options = {bin: cliPath(), defaultDir: storeRoot(withoutDir)};
  writeStartFile(storePaths(), shell, options);
  return shell.init(options);
}

/** `cudaenv switch-check LABEL`: the check of an installed version, cached as the hook reads it. */
export async function switchCheckFor(label: string): Promise<{label: string; line: string; cached: boolean}> {
  const {isLabel} = await import('../core/versions/version.js');
  if (!isLabel(label)) throw new UsageError(`${JSON.stringify(label)} is not a version label`, 'Give an installed version such as 12.4.1.');
  const [{switchCheck}, {layeredStorePaths}, {warningLine}] = await Promise.all([import('../core/shell/switch-check.js'), import('../core/shell/site-sync.js'), import('./color.js')]);
  return switchCheck(layeredStorePaths((m) => process.stderr.write(warningLine(m))), label, process.env);
}
