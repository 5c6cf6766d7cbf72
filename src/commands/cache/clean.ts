import {Flags} from '@oclif/core';
import {CudaenvCommand} from '../../cli/base.js';
import {cleanCache, type CleanResult} from '../../core/remote/cache.js';
import {formatBytes} from '../../core/text/bytes.js';
import {refuseForeignStore} from '../../core/store/store-owner.js';

export default class CacheClean extends CudaenvCommand {
  static override summary = 'Remove downloaded archives, interrupted downloads, manifest copies, stored check results, and what interrupted installs left under tmp/; installed versions are untouched.';
  static override description = 'An archive that a running install is using is kept and named. A later install of a removed archive downloads it again.';
  static override examples = ['<%= config.bin %> cache clean', '<%= config.bin %> cache clean --partial'];
  static override flags = {
    partial: Flags.boolean({description: 'only interrupted downloads (.part files) and the staging directories of interrupted installs; keep verified archives, manifests and check results'}),
  };

  async run(): Promise<CleanResult> {
    const {flags} = await this.parse(CacheClean);
    refuseForeignStore(this.paths, ['cache', 'clean', ...this.argv]);
    const result = await cleanCache(this.paths, {partialOnly: flags.partial});
    for (const b of result.busy) this.warn2(`kept ${b.file}: in use by ${b.by}`);
    for (const b of result.staging.busy) this.warn2(`kept ${b.path}: an install of CUDA ${b.version} runs now and removes it itself`);
    for (const r of result.staging.restored) this.warn2(`put ${r.path} back as CUDA ${r.version}: a \`install --force\` was killed between moving it aside and putting the new copy in`);
    if (!this.jsonEnabled()) {
      const parts = [`${result.removed.length} file${result.removed.length === 1 ? '' : 's'}`];
      if (result.manifestsRemoved) parts.push(`${result.manifestsRemoved} manifest cop${result.manifestsRemoved === 1 ? 'y' : 'ies'}`);
      if (result.checksRemoved) parts.push(`${result.checksRemoved} check result file${result.checksRemoved === 1 ? '' : 's'}`);
      const what = parts.length === 1 ? parts[0] : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
      const staged = result.staging.removed.length;
      const stagingText = staged > 0 ? ` and ${staged} staging director${staged === 1 ? 'y' : 'ies'} of interrupted installs` : '';
      this.log(`Removed ${what} from the cache${stagingText}, ${formatBytes(result.freedBytes)} freed.`);
    }
    return result;
  }
}
