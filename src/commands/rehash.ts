import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {rehash} from '../core/shell/rehash.js';
import {ensureStoreDirs, refreshResolveIndex} from '../core/store/registry.js';

export default class Rehash extends CudaenvCommand {
  static override summary = 'Rewrite the shims (one per toolkit program) and the shell hook\'s index.';
  static override description = 'Runs by itself after install, uninstall, add, alias and global; run it by hand after changing a registered toolkit. Put the shims directory on PATH for IDEs, make and cron: the shims run the version `cudaenv current` reports.';
  static override examples = ['<%= config.bin %> rehash'];

  async run(): Promise<{shims: string; programs: string[]; removed: string[]}> {
    await this.parse(Rehash);
    refuseForeignStore(this.paths, ['rehash', ...this.argv]);
    ensureStoreDirs(this.paths);
    // The resolve/ links first: a registered toolkit deleted since the last change leaves `12`
    // pointing at it, and the shims and the shell hook read those links.
    refreshResolveIndex(this.paths);
    const result = rehash(this.paths);
    const programs = result.programs;
    if (!this.jsonEnabled()) {
      this.log(`${programs.length} shim${programs.length === 1 ? '' : 's'} in ${this.paths.shims}${result.removed.length > 0 ? ` (removed: ${result.removed.join(', ')})` : ''}`);
    }
    return {shims: this.paths.shims, programs, removed: result.removed};
  }
}
