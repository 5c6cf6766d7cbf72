import {Flags} from '@oclif/core';
import {CudaenvCommand} from '../../../cli/base.js';
import {uninstallHook, type UninstallResult} from '../../../core/conda/hook.js';

export default class CondaHookUninstall extends CudaenvCommand {
  static override summary = 'Remove cudaenv\'s activation hook from a conda environment.';
  static override description = 'Removes the activate.d and deactivate.d scripts cudaenv wrote. An environment that is active keeps its variables until it is deactivated: deactivate it first, then uninstall, to restore them.';
  static override examples = ['<%= config.bin %> conda hook uninstall', '<%= config.bin %> conda hook uninstall -n torch-env'];
  static override flags = {
    name: Flags.string({char: 'n', description: 'environment name, as `conda env list` shows it', exclusive: ['prefix']}),
    prefix: Flags.string({char: 'p', description: 'environment path', exclusive: ['name']}),
  };

  async run(): Promise<UninstallResult> {
    const {flags} = await this.parse(CondaHookUninstall);
    const result = uninstallHook({name: flags.name, prefix: flags.prefix});
    if (!this.jsonEnabled()) {
      const where = result.name ? `${result.name} (${result.prefix})` : result.prefix;
      if (result.removed.length === 0) this.log(`no cudaenv hook in ${where}: nothing to remove`);
      else this.log(`removed the conda hook${result.version ? ` for CUDA ${result.version}` : ''} from ${where} (${result.removed.length} scripts)`);
    }
    return result;
  }
}
