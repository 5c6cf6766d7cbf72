import {CudaenvCommand} from '../../../cli/base.js';
import {hookStatus, type StatusResult} from '../../../core/conda/hook.js';

export default class CondaHookStatus extends CudaenvCommand {
  static override summary = 'List the conda environments that have a cudaenv hook, with their versions.';
  static override description = 'Environments come from `conda env list --json` when conda is on PATH, otherwise from ~/.conda/environments.txt; the active environment (CONDA_PREFIX) is always included.';
  static override examples = ['<%= config.bin %> conda hook status', '<%= config.bin %> conda hook status --json'];

  async run(): Promise<StatusResult> {
    await this.parse(CondaHookStatus);
    const result = hookStatus();
    if (!this.jsonEnabled()) {
      for (const w of result.warnings) this.warn2(w);
      const hooked = result.environments.filter((e) => e.hook || e.error);
      if (result.source === 'none') this.log('conda is not on PATH and ~/.conda/environments.txt does not exist: only the active environment is looked at');
      for (const e of result.environments) {
        const label = `${e.active ? '* ' : '  '}${e.name ?? e.prefix}${e.name ? ` (${e.prefix})` : ''}`;
        if (e.error) this.log(`${label}: unreadable hook: ${e.error}`);
        else if (!e.hook) this.log(`${label}: no cudaenv hook`);
        else {
          const notes = [e.hook.ldLibraryPath === 'none' ? 'LD_LIBRARY_PATH left alone' : 'LD_LIBRARY_PATH prepended'];
          if (!e.hook.toolkitPresent) notes.push(`toolkit ${e.hook.toolkit} is gone: activation only warns`);
          if (e.hook.missing.length > 0) notes.push(`${e.hook.missing.length} hook script(s) missing: reinstall`);
          this.log(`${label}: CUDA ${e.hook.version} (${notes.join('; ')})`);
        }
      }
      if (hooked.length === 0) this.log('no conda environment has a cudaenv hook');
    }
    return result;
  }
}
