import {resolve} from 'node:path';
import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {UsageError} from '../core/errors.js';
import {altOptionsFromEnv, ldconfigOptionsFromEnv, linkVersion, type LinkResult} from '../core/link/index.js';
import {notInstalledError, resolveSpec} from '../core/selection/resolve.js';
import {describeOrigin, requireSelection} from '../core/selection/select.js';
import {parseSpec} from '../core/versions/spec.js';
import {quoteSh} from '../core/text/quote.js';

export default class Link extends CudaenvCommand {
  static override summary = 'Point /usr/local/cuda (or --target) at a CUDA version, machine-wide.';
  static override description = 'Without SPEC, the version the nearest .cuda-version selects. The link is swapped atomically and the previous target recorded (`cudaenv unlink` restores it). A real directory or file is never replaced. A target managed by update-alternatives (NVIDIA\'s packages) is moved with update-alternatives --set. ldconfig runs when ld.so.conf names the target.';
  static override examples = ['<%= config.bin %> link 12.4', 'sudo <%= config.bin %> link', '<%= config.bin %> link 12.4 --target ~/opt/cuda --dry-run'];
  static override args = {spec: Args.string({description: 'version spec (default: what .cuda-version selects here)'})};
  static override flags = {
    target: Flags.string({description: 'the link to manage', default: '/usr/local/cuda'}),
    'dry-run': Flags.boolean({description: 'say what would change, change nothing'}),
  };

  async run(): Promise<LinkResult> {
    const {args, flags} = await this.parse(Link);
    let label: string | undefined;
    if (args.spec) {
      const r = resolveSpec(this.paths, parseSpec(args.spec));
      if (r.system) throw new UsageError('`system` is not a version to link', 'To put back what was there before cudaenv, run `cudaenv unlink`.');
      if (!r.label) throw notInstalledError(r);
      label = r.label;
    } else {
      const sel = requireSelection(this.paths);
      for (const w of sel.warnings) this.warn2(w);
      if (sel.system || !sel.label) {
        throw new UsageError(`no version to link: the selection is \`system\` (${describeOrigin(sel.origin)})`, 'Name one (cudaenv link 12.4) or pin the project (cudaenv local 12.4).');
      }
      label = sel.label;
    }
    const ctx = {paths: this.paths, alt: altOptionsFromEnv(), ld: ldconfigOptionsFromEnv(), argv: ['link', ...this.argv], env: process.env};
    const result = await linkVersion(ctx, resolve(flags.target), label, flags['dry-run'] === true);
    if (!this.jsonEnabled()) {
      const prefix = result.dryRun ? 'would: ' : '';
      if (result.dryRun) for (const a of result.actions) this.log(`${prefix}${a}`);
      else this.log(`${result.target} -> ${result.path} (CUDA ${result.version}${result.mode === 'alternatives' ? `, via update-alternatives: ${result.alternatives.map((a) => a.group).join(', ')} in manual mode` : ''}; was ${result.before})`);
      if (result.ldconfig.message) this.log(result.ldconfig.message);
      if (result.check) this.log(result.check.ok === null ? result.check.line : `check: ${result.check.line}`);
      // The absolute target, quoted: the command must work from any directory, with any path.
      if (!result.dryRun) this.log(`\`cudaenv unlink${result.target === '/usr/local/cuda' ? '' : ` --target ${quoteSh(result.target)}`}\` restores ${result.restores}.`);
    }
    // A failing check is reported, like after every switch; the link itself was made.
    if (result.ldconfig.ok === false) process.exitCode = 1;
    return result;
  }
}
