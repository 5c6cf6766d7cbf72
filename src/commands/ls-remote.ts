import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {checkRemoteSpec, listReleases} from '../core/remote/catalog.js';
import {mirrorsFor} from '../core/remote/choose.js';
import {matchesPrefix} from '../core/remote/labels.js';
import {installedLabels} from '../core/store/registry.js';
import {cacheRemoteVersions} from '../core/completion/model.js';

interface LsRemoteResult {
  mirror: string;
  releases: Array<{version: string; installed: boolean}>;
}

export default class LsRemote extends CudaenvCommand {
  static override summary = 'List the CUDA releases a mirror offers (newest last; * marks installed ones).';
  static override examples = ['<%= config.bin %> ls-remote', '<%= config.bin %> ls-remote 12', '<%= config.bin %> ls-remote --json'];
  static override args = {prefix: Args.string({description: 'only releases under this version prefix, e.g. 12 or 12.4'})};
  static override flags = {mirror: Flags.string({description: 'CUDA redist mirror: URL, file:// URL or directory'})};

  async run(): Promise<LsRemoteResult> {
    const {args, flags} = await this.parse(LsRemote);
    if (args.prefix !== undefined && args.prefix !== 'latest') checkRemoteSpec(args.prefix, 'the prefix');
    const {cuda} = await mirrorsFor(this.paths, flags.mirror);
    const installed = new Set(installedLabels(this.paths));
    let labels = await listReleases(cuda);
    // For shell completion of `install` (no network per TAB). Under sudo the store is the user's: leave it alone.
    if (!process.env.SUDO_USER) cacheRemoteVersions(this.paths, labels);
    if (args.prefix === 'latest') labels = labels.slice(-1);
    else if (args.prefix !== undefined) labels = labels.filter((l) => matchesPrefix(l, args.prefix!));
    const result = {mirror: cuda.display, releases: labels.map((version) => ({version, installed: installed.has(version)}))};
    if (!this.jsonEnabled()) {
      if (labels.length === 0) this.log(`${cuda.display} offers no release${args.prefix ? ` matching ${args.prefix}` : ''}.`);
      for (const r of result.releases) this.log(`${r.installed ? '*' : ' '} ${r.version}`);
    }
    return result;
  }
}
