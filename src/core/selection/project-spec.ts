import {UsageError} from '../errors.js';
import type {StorePaths} from '../store/paths.js';
import {missingAliasHint, resolveSpec} from './resolve.js';
import {findVersionFile, readVersionFile, VERSION_FILE} from '../versions/version-file.js';

/** What `cudaenv install` without SPEC installs: the project's pinned release and its cuDNN. */
export interface ProjectSpec {
  /** The release spec to install (aliases followed): 12.4, 12.4.1, latest. */
  spec: string;
  /** The file's `cudnn=` setting, when it has one. */
  cudnn?: string;
  /** The .cuda-version it came from. */
  file: string;
  /** The alias names followed on the way ("stable -> 12.4"), empty when the file names a release. */
  aliases: string[];
}

/**
 * The release the nearest `.cuda-version` at or above `cwd` pins, as nvm installs what .nvmrc
 * names and pyenv what .python-version names: clone a project, run `cudaenv install`. An alias
 * in the file is followed through this store's aliases; `system` and a missing alias cannot be
 * installed and say why.
 */
export function projectInstallSpec(paths: StorePaths, cwd: string): ProjectSpec {
  const file = findVersionFile(cwd);
  if (file === undefined) {
    throw new UsageError(`no release to install: no SPEC given, and no ${VERSION_FILE} in ${cwd} or above it`,
      'Name one (cudaenv install 12.4), or pin the project first (cudaenv local 12.4) and run cudaenv install there.');
  }
  const parsed = readVersionFile(file);
  const r = resolveSpec(paths, parsed.spec, []);
  if (r.missingAlias !== undefined) {
    throw new UsageError(`${file} names ${parsed.spec.text}, and there is no alias ${r.missingAlias} to say which release that is`, missingAliasHint(r.missingAlias));
  }
  if (r.target?.kind === 'label') {
    throw new UsageError(`${file} names ${r.target.text}, a toolkit registered under that label (cudaenv add DIR --as ${r.target.text}): install never makes one`,
      `Register that toolkit here (cudaenv add DIR --as ${r.target.text}), or install its release: cudaenv install ${r.target.release}.`);
  }
  if (r.system || r.target === undefined || (r.target.kind !== 'version' && r.target.kind !== 'latest')) {
    throw new UsageError(`${file} selects the system toolkit (${[...r.aliases, 'system'].join(' -> ')}): there is nothing to install`,
      'Write a release such as 12.4 in it, or name one: cudaenv install 12.4.');
  }
  const cudnn = parsed.settings.cudnn;
  return {spec: r.target.text, file, aliases: r.aliases, ...(cudnn ? {cudnn} : {})};
}
