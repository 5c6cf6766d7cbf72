import {Args, Flags} from '@oclif/core';
import {existsSync, statSync} from 'node:fs';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {UsageError} from '../core/errors.js';
import {SETTING_KEYS, loadSettings, type SettingKey, type Settings} from '../core/store/settings.js';
import {mirrorSettingValue} from '../core/remote/mirror.js';
import {redactCredentials} from '../core/text/redact.js';

/** The value a setting stores for what was typed: mirrors made absolute, `quiet` a boolean. */
function settingValue(key: SettingKey, value: string): unknown {
  if (key === 'mirror' || key === 'cudnnMirror') return mirrorSettingValue(value, key);
  if (key === 'quiet') {
    if (value === 'true' || value === 'false') return value === 'true';
    throw new UsageError(`invalid value ${JSON.stringify(value)} for the setting quiet`, 'Give true or false.');
  }
  return value;
}

export default class Config extends CudaenvCommand {
  static override summary = 'Show or change settings (mirror, cudnnMirror, ldLibraryPath, quiet).';
  static override examples = ['<%= config.bin %> config', '<%= config.bin %> config ldLibraryPath none', '<%= config.bin %> config mirror --unset'];
  static override args = {
    key: Args.string({description: 'setting name', options: [...SETTING_KEYS]}),
    value: Args.string({description: 'new value'}),
  };
  static override flags = {unset: Flags.boolean({description: 'remove the setting'})};

  async run(): Promise<Settings> {
    const {args, flags} = await this.parse(Config);
    if (args.value !== undefined || flags.unset) refuseForeignStore(this.paths, ['config', ...this.argv]);
    const settings = await loadSettings(this.paths);
    const key = args.key as SettingKey | undefined;
    if (!key) {
      const all = shown(settings.all());
      if (!this.jsonEnabled()) {
        this.log(`settings file: ${settings.file}`);
        for (const k of SETTING_KEYS) this.log(`${k} = ${all[k] ?? '(default)'}`);
      }
      return all;
    }
    if (flags.unset) settings.delete(key);
    else if (args.value !== undefined) {
      const value = settingValue(key, args.value);
      settings.set(key, value as never);
      // A directory that is not there yet (a share not mounted) is allowed, and said.
      if ((key === 'mirror' || key === 'cudnnMirror') && typeof value === 'string' && value.startsWith('/') && !existsSync(value)) {
        this.warn2(`the directory ${value} does not exist (yet): installs from this mirror fail until it does`);
      }
      // A password in a file other users can read (a shared store, a home directory open to others).
      if (typeof value === 'string' && redactCredentials(value) !== value) {
        const mode = statSync(settings.file).mode & 0o777;
        if (mode & 0o044) {
          this.warn2(`the password of this URL is stored as it is in ${settings.file} (mode ${mode.toString(8)}: other users can read it); ` +
            `chmod 600 it, or give the URL in ${key === 'cudnnMirror' ? 'CUDAENV_CUDNN_MIRROR' : 'CUDAENV_MIRROR'} in your own environment instead`);
        }
      }
    }
    else if (!this.jsonEnabled()) this.log(redactCredentials(String(settings.get(key) ?? '(default)')));
    if (flags.unset && args.value !== undefined) throw new UsageError('give either a value or --unset, not both');
    return shown(settings.all());
  }
}

/** The settings as shown: a mirror URL's password stays in the settings file, never on the screen or in --json. */
function shown(all: Settings): Settings {
  return Object.fromEntries(Object.entries(all).map(([k, v]) => [k, typeof v === 'string' ? redactCredentials(v) : v])) as Settings;
}
