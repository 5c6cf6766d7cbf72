import {Args} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {uninstallVersion, type UninstallResult} from '../core/remote/uninstall.js';

export default class Uninstall extends CudaenvCommand {
  static override summary = 'Remove an installed CUDA version (a registered one is only unregistered).';
  static override examples = ['<%= config.bin %> uninstall 12.4.1'];
  static override args = {version: Args.string({description: 'the full version, as `cudaenv ls` shows it', required: true})};

  async run(): Promise<UninstallResult> {
    const {args} = await this.parse(Uninstall);
    refuseForeignStore(this.paths, ['uninstall', ...this.argv]);
    const result = await uninstallVersion(this.paths, args.version);
    for (const w of result.warnings) this.warn2(w);
    if (!this.jsonEnabled()) {
      this.log(result.kind === 'registered'
        ? `Unregistered CUDA ${result.version}; its files in ${result.target} are untouched.`
        : `Removed CUDA ${result.version}.`);
    }
    return result;
  }
}
