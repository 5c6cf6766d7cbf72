import {CudaenvCommand} from '../../cli/base.js';
import {describeCache, type CacheState} from '../../core/remote/cache.js';
import {formatBytes} from '../../core/text/bytes.js';

export default class Cache extends CudaenvCommand {
  static override summary = 'Show the cache: verified archives kept for reinstalls, interrupted downloads, manifest copies, stored check results, and what interrupted installs left under tmp/.';
  static override description = 'Free it with `cudaenv cache clean` (`--partial` for interrupted downloads only).';
  static override examples = ['<%= config.bin %> cache', '<%= config.bin %> cache --json'];

  async run(): Promise<CacheState> {
    await this.parse(Cache);
    const state = describeCache(this.paths);
    if (!this.jsonEnabled()) {
      const archives = state.files.filter((f) => f.kind === 'archive');
      const partial = state.files.filter((f) => f.kind === 'partial');
      const sum = (fs: typeof state.files): number => fs.reduce((s, f) => s + f.bytes, 0);
      this.log(`${state.dir}: ${formatBytes(state.bytes)}`);
      this.log(`  ${archives.length} verified archive${archives.length === 1 ? '' : 's'} (${formatBytes(sum(archives))}), kept for reinstalls`);
      this.log(`  ${partial.length} interrupted download${partial.length === 1 ? '' : 's'} (${formatBytes(sum(partial))}), resumed by the next install of their archive`);
      this.log(`  ${state.manifests.files} manifest cop${state.manifests.files === 1 ? 'y' : 'ies'} (${formatBytes(state.manifests.bytes)}), for ls-remote`);
      this.log(`  ${state.checks.files} check result file${state.checks.files === 1 ? '' : 's'} (${formatBytes(state.checks.bytes)}), reused by \`cudaenv check\` while nothing they read changes`);
      if (state.compiled.files > 0) this.log(`  ${state.compiled.files} compiled code file${state.compiled.files === 1 ? '' : 's'} (${formatBytes(state.compiled.bytes)}), which Node.js keeps for cudaenv's start`);
      if (state.staging.length > 0) {
        // Not in the cache directory, but as much the user's disk: what killed installs left under tmp/.
        const bytes = state.staging.reduce((s, l) => s + l.bytes, 0);
        this.log(`${state.staging.length} staging director${state.staging.length === 1 ? 'y' : 'ies'} of interrupted installs (${formatBytes(bytes)}), reused by nothing:`);
        for (const l of state.staging) this.log(`  ${l.path} (CUDA ${l.version}, ${formatBytes(l.bytes)}, left by process ${l.pid})`);
      }
      if (state.bytes > 0 || state.staging.length > 0) this.log('Free it with `cudaenv cache clean` (`--partial`: interrupted downloads and staging only).');
    }
    return state;
  }
}
