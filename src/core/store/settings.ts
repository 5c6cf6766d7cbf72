import {readFileSync, statSync} from 'node:fs';
import {CudaenvError, isErrno} from '../errors.js';
import type {StorePaths} from './paths.js';
import {importPackage} from '../import-package.js';
import {quoteSh} from '../text/quote.js';

/** Settings a user may change with `cudaenv config` or by editing `config.json` in the store. */
export interface Settings {
  /** Base URL or directory of NVIDIA's CUDA redist tree. */
  mirror?: string;
  /** Base URL or directory of NVIDIA's cuDNN redist tree. */
  cudnnMirror?: string;
  /** Whether switching adds the toolkit's lib64 to LD_LIBRARY_PATH. */
  ldLibraryPath?: 'prepend' | 'none';
  /** No line saying what `use` and `deactivate` changed (as their --quiet). */
  quiet?: boolean;
}

export type SettingKey = keyof Settings;
export const SETTING_KEYS: readonly SettingKey[] = ['mirror', 'cudnnMirror', 'ldLibraryPath', 'quiet'];

/** What each setting accepts, for the message that refuses a value. */
const VALID_VALUES: Record<SettingKey, string> = {
  mirror: 'Give an https:// or http:// URL, or a directory, that serves NVIDIA\'s compute/cuda/redist/ layout.',
  cudnnMirror: 'Give an https:// or http:// URL, or a directory, that serves NVIDIA\'s compute/cudnn/redist/ layout.',
  ldLibraryPath: 'Valid values: prepend (add the version\'s lib64 to LD_LIBRARY_PATH, the default) or none (leave LD_LIBRARY_PATH alone).',
  quiet: 'Valid values: true (use and deactivate print nothing) or false (one line saying what changed, the default).',
};

const VALIDATORS: Record<SettingKey, (value: unknown) => boolean> = {
  mirror: (v) => typeof v === 'string' && v.length > 0,
  cudnnMirror: (v) => typeof v === 'string' && v.length > 0,
  ldLibraryPath: (v) => v === 'prepend' || v === 'none',
  quiet: (v) => typeof v === 'boolean',
};

/**
 * One setting read straight from config.json, validated as SettingsStore.get does, without
 * loading `conf` (for the start-up fast path: `use` reads ldLibraryPath and quiet).
 */
export function readSettingSync<K extends SettingKey>(paths: StorePaths, key: K): Settings[K] | undefined {
  let text: string;
  try {
    text = readFileSync(paths.configFile, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw error;
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw corrupted(paths.configFile, error);
  }
  const value = data !== null && typeof data === 'object' ? (data as Record<string, unknown>)[key] : undefined;
  return validated(key, value, paths.configFile);
}

/** A stored value checked as `cudaenv config` would accept it (undefined: not set). */
function validated<K extends SettingKey>(key: K, value: unknown, file: string): Settings[K] | undefined {
  if (value === undefined) return undefined;
  if (!VALIDATORS[key](value)) {
    throw new CudaenvError(`the setting ${key} in ${file} has an invalid value ${JSON.stringify(value)}`, {
      hint: `Run \`cudaenv config ${key} VALUE\` or edit the file.`,
      code: 'settings-invalid',
    });
  }
  return value as Settings[K];
}

/**
 * The settings file, through `conf` (loaded lazily: it costs start-up time that the
 * hot commands do not pay). A corrupted file is named in the error, never a stack trace.
 */
export async function loadSettings(paths: StorePaths): Promise<SettingsStore> {
  const {default: Conf} = await importPackage('conf', () => import('conf'));
  let conf;
  try {
    // Each write replaces the file: it keeps the mode it has (a `chmod 600` for a mirror password sticks).
    const mode = existingMode(paths.configFile);
    conf = new Conf<Settings>({cwd: paths.root, configName: 'config', clearInvalidConfig: false, ...(mode === undefined ? {} : {configFileMode: mode})});
    void conf.store; // parse now, so corruption surfaces here
  } catch (error) {
    throw corrupted(paths.configFile, error);
  }
  return new SettingsStore(conf, paths.configFile);
}

function existingMode(file: string): number | undefined {
  try {
    return statSync(file).mode & 0o777;
  } catch {
    return undefined;
  }
}

function corrupted(file: string, error: unknown): CudaenvError {
  const reason = error instanceof Error ? error.message : String(error);
  return new CudaenvError(`the settings file ${file} is not valid JSON (${reason})`, {
    hint: `Fix it by hand, or move it away (mv ${quoteSh(file)} ${quoteSh(`${file}.bad`)}) to start from defaults.`,
    code: 'settings-corrupt',
  });
}

interface ConfLike<T> {
  get<K extends keyof T>(key: K): T[K] | undefined;
  set<K extends keyof T>(key: K, value: T[K]): void;
  delete<K extends keyof T>(key: K): void;
  store: T;
}

export class SettingsStore {
  constructor(private readonly conf: ConfLike<Settings>, readonly file: string) {}

  get<K extends SettingKey>(key: K): Settings[K] | undefined {
    let value: unknown;
    try {
      value = this.conf.get(key);
    } catch (error) {
      throw corrupted(this.file, error);
    }
    return validated(key, value, this.file);
  }

  set<K extends SettingKey>(key: K, value: Settings[K]): void {
    if (!VALIDATORS[key](value)) {
      throw new CudaenvError(`invalid value ${JSON.stringify(value)} for the setting ${key}`, {exitCode: 2, code: 'usage', hint: VALID_VALUES[key]});
    }
    this.conf.set(key, value);
  }

  delete(key: SettingKey): void {
    this.conf.delete(key);
  }

  all(): Settings {
    try {
      return {...this.conf.store};
    } catch (error) {
      throw corrupted(this.file, error);
    }
  }
}
