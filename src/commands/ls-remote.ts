import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {CudaenvError} from '../core/errors.js';
import {checkRemoteSpec, listReleases} from '../core/remote/catalog.js';
import {mirrorsFor} from '../core/remote/choose.js';
import {checkReleases} from '../core/remote/installable.js';
import {matchesPrefix} from '../core/remote/labels.js';
import {parsePlatform} from '../core/remote/platform.js';
import {parseProfile, PROFILES} from '../core/remote/profiles.js';
import {tableAge, tableAgeNotes, type TableAge} from '../core/doctor/table-age.js';
import {installedLabels} from '../core/store/registry.js';
import {cacheRemoteVersions} from '../core/completion/model.js';

interface LsRemoteResult {
  mirror: string;
  /** installable: what `install VERSION` with the same --arch, --profile and --allow-missing-parts does; missing_parts: the profile's parts it lacks. */
  releases: Array<{version: string; installed: boolean; installable: boolean; platform: string | null; why?: string; missing_parts?: string[]}>;
  /** The listed releases newer than cudaenv's release and driver tables. */
  tables: TableAge;
}

export default class LsRemote extends CudaenvCommand {
  static override summary = 'List the CUDA releases a mirror offers (newest last; * marks installed ones, ! those that `cudaenv install` refuses here, with why).';
  static override examples = ['<%= config.bin %> ls-remote', '<%= config.bin %> ls-remote 12', '<%= config.bin %> ls-remote --arch linux-sbsa', '<%= config.bin %> ls-remote --json'];
  static override args = {prefix: Args.string({description: 'only releases under this version prefix, e.g. 12 or 12.4'})};
  static override flags = {
    mirror: Flags.string({description: 'CUDA redist mirror: URL, file:// URL or directory'}),
    arch: Flags.string({description: 'check installability for linux-x86_64, linux-sbsa or linux-aarch64 (default: this machine)'}),
    profile: Flags.string({description: 'check installability for this profile, as install does (default: devel)', options: [...PROFILES]}),
    'allow-missing-parts': Flags.boolean({description: 'count a release that lacks parts of the profile as installable, as `install --allow-missing-parts` installs it'}),
  };

  async run(): Promise<LsRemoteResult> {
    const {args, flags} = await this.parse(LsRemote);
    if (args.prefix !== undefined && args.prefix !== 'latest') checkRemoteSpec(args.prefix, 'the prefix');
    const explicit = flags.arch ? parsePlatform(flags.arch) : undefined;
    const {cuda} = await mirrorsFor(this.paths, flags.mirror);
    const installed = new Set(installedLabels(this.paths));
    let labels = await listReleases(cuda);
    // Nothing at all is a mirror set wrong (another directory, a proxy's page), not an empty answer.
    if (labels.length === 0) {
      throw new CudaenvError(`the mirror ${cuda.display} offers no CUDA release`, {hint: 'Its index lists no redistrib_*.json at all: check --mirror (or CUDAENV_MIRROR, the mirror setting).', code: 'not-found'});
    }
    // For shell completion of `install` (no network per TAB). Under sudo the store is the user's: leave it alone.
    if (!process.env.SUDO_USER) cacheRemoteVersions(this.paths, labels);
    if (args.prefix === 'latest') labels = labels.slice(-1);
    else if (args.prefix !== undefined) labels = labels.filter((l) => matchesPrefix(l, args.prefix!));
    const profile = flags.profile === undefined ? undefined : parseProfile(flags.profile);
    // The rule install applies (src/core/remote/installable.ts): a release it would refuse is marked !.
    const checked = await checkReleases(cuda, labels, {explicit, profile, allowMissingParts: flags['allow-missing-parts'], cacheDir: this.paths.cache});
    const result = {mirror: cuda.display, releases: labels.map((version) => {
      const c = checked.get(version)!;
      return {version, installed: installed.has(version), installable: c.installable, platform: c.platform ?? null, ...(c.why ? {why: c.why} : {}), ...(c.missing ? {missing_parts: c.missing} : {})};
    }), tables: tableAge(labels)};
    if (!this.jsonEnabled()) {
      if (labels.length === 0) this.log(`${cuda.display} offers no release${args.prefix ? ` matching ${args.prefix}` : ''}.`);
      for (const r of result.releases) {
        const without = r.installable && r.missing_parts ? `  (installed without ${r.missing_parts.join(', ')})` : '';
        this.log(`${r.installed ? '*' : r.installable ? ' ' : '!'} ${r.version}${r.why ? `  (cannot be installed: ${r.why})` : without}`);
      }
      for (const note of tableAgeNotes(result.tables)) process.stderr.write(`cudaenv: note: ${note}\n`);
    }
    return result;
  }
}
