import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {UsageError} from '../core/errors.js';
import {SETTING_KEYS, loadSettings, type SettingKey, type Settings} from '../core/store/settings.js';
import {mirrorSettingValue} from '../core/remote/mirror.js';

export default class Config extends CudaenvCommand {
  static override summary = 'Show or change settings (mirror, cudnnMirror, ldLibraryPath).';
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
      const all = settings.all();
      if (!this.jsonEnabled()) {
        this.log(`settings file: ${settings.file}`);
        for (const k of SETTING_KEYS) this.log(`${k} = ${all[k] ?? '(default)'}`);
      }
      return all;
    }
    if (flags.unset) settings.delete(key);
    else if (args.value !== undefined) settings.set(key, (key === 'mirror' || key === 'cudnnMirror' ? mirrorSettingValue(args.value, key) : args.value) as never);
    else if (!this.jsonEnabled()) this.log(String(settings.get(key) ?? '(default)'));
    if (flags.unset && args.value !== undefined) throw new UsageError('give either a value or --unset, not both');
    return settings.all();
  }
}
