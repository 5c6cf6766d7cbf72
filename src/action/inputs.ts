import {join} from 'node:path';
import {existsSync} from 'node:fs';
import {UsageError} from '../core/errors.js';
import {checkRemoteSpec} from '../core/remote/catalog.js';
import {DEFAULT_CUDA_MIRROR, DEFAULT_CUDNN_MIRROR, parseMirror, type Mirror} from '../core/remote/mirror.js';
import {PROFILES, type Profile} from '../core/remote/profiles.js';
import {readVersionFile, VERSION_FILE} from '../core/versions/version-file.js';

export type LdLibraryPathInput = 'prepend' | 'none';

export interface ActionInputs {
  /** A remote spec: 12, 12.4, 12.4.1 or latest. */
  spec: string;
  /** Where the spec came from, for messages: "the cuda input" or the .cuda-version path. */
  specSource: string;
  profile?: Profile;
  /** As written (short names such as nvcc allowed); mapped onto the manifest's names later. */
  components?: string[];
  cudnn?: string;
  mirror: Mirror;
  cudnnMirror: Mirror;
  cache: boolean;
  check: boolean;
  ldLibraryPath: LdLibraryPathInput;
}

/**
 * An input as the runner passes it: `INPUT_<NAME>`, the name upper-cased with spaces made
 * underscores and dashes kept (INPUT_LD-LIBRARY-PATH), trimmed as @actions/core does.
 */
export function getInput(env: NodeJS.ProcessEnv, name: string): string {
  return (env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] ?? '').trim();
}

/** YAML 1.2 core-schema booleans, the set @actions/core's getBooleanInput accepts. */
function booleanInput(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const value = getInput(env, name);
  if (value === '') return fallback;
  if (['true', 'True', 'TRUE'].includes(value)) return true;
  if (['false', 'False', 'FALSE'].includes(value)) return false;
  throw new UsageError(`the ${name} input ${JSON.stringify(value)} is not a boolean`, `Write ${name}: true or ${name}: false.`);
}

/** `nvcc,cudart`, or one per line (a YAML block), or separated by blanks. */
export function parseComponentsInput(text: string): string[] {
  const names = text.split(/[\s,]+/).filter(Boolean);
  for (const n of names) {
    if (!/^[A-Za-z0-9_.+-]{1,100}$/.test(n)) throw new UsageError(`the components input: ${JSON.stringify(n)} is not a component name`, 'Example: components: nvcc,cudart (or cuda_nvcc,cuda_cudart).');
  }
  if (names.length === 0) throw new UsageError('the components input holds no component name', 'Example: components: nvcc,cudart');
  return names;
}

export function readInputs(env: NodeJS.ProcessEnv, workspace: string): ActionInputs {
  let spec = getInput(env, 'cuda');
  let specSource = 'the cuda input';
  let cudnn = getInput(env, 'cudnn') || undefined;
  if (spec === '') {
    const file = join(workspace, VERSION_FILE);
    if (!existsSync(file)) {
      throw new UsageError(`no CUDA version given: the cuda input is empty and there is no ${VERSION_FILE} in ${workspace}`,
        `Give one: with: cuda: '12.4' (or commit a ${VERSION_FILE} and check the repository out before this step).`);
    }
    const parsed = readVersionFile(file);
    if (parsed.spec.kind !== 'version' && parsed.spec.kind !== 'latest') {
      throw new UsageError(`${file} names ${JSON.stringify(parsed.spec.text)}, which is not a release the action can download`,
        'Write a version such as 12.4 in it, or give the cuda input.');
    }
    spec = parsed.spec.text;
    specSource = file;
    // `cudnn=9` in .cuda-version is the project's choice too, unless the step overrides it.
    cudnn ??= parsed.settings.cudnn || undefined;
  }
  checkRemoteSpec(spec, specSource === 'the cuda input' ? 'the cuda input' : `the spec in ${specSource}`);
  if (cudnn !== undefined) checkRemoteSpec(cudnn, 'the cudnn input');
  const profileText = getInput(env, 'profile');
  if (profileText !== '' && !(PROFILES as readonly string[]).includes(profileText)) {
    throw new UsageError(`the profile input ${JSON.stringify(profileText)} is not a profile`, `Use ${PROFILES.join(', ')}.`);
  }
  const componentsText = getInput(env, 'components');
  const ld = getInput(env, 'ld-library-path') || 'prepend';
  if (ld !== 'prepend' && ld !== 'none') {
    throw new UsageError(`the ld-library-path input ${JSON.stringify(ld)} is neither prepend nor none`, 'prepend puts the toolkit\'s lib64 first on LD_LIBRARY_PATH; none leaves LD_LIBRARY_PATH alone.');
  }
  return {
    spec, specSource,
    profile: profileText === '' ? undefined : profileText as Profile,
    components: componentsText === '' ? undefined : parseComponentsInput(componentsText),
    cudnn,
    mirror: parseMirror(getInput(env, 'mirror') || DEFAULT_CUDA_MIRROR, 'the mirror input'),
    cudnnMirror: parseMirror(getInput(env, 'cudnn-mirror') || DEFAULT_CUDNN_MIRROR, 'the cudnn-mirror input'),
    cache: booleanInput(env, 'cache', true),
    check: booleanInput(env, 'check', true),
    ldLibraryPath: ld,
  };
}
