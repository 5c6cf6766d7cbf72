import {resolve} from 'node:path';
import {Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {altOptionsFromEnv, ldconfigOptionsFromEnv, unlinkTarget, type UnlinkResult} from '../core/link/index.js';

export default class Unlink extends CudaenvCommand {
  static override summary = 'Restore what /usr/local/cuda (or --target) was before `cudaenv link`.';
  static override description = 'A previous link is put back (atomically), a link cudaenv created is removed, and an update-alternatives group returns to its earlier mode and choice, with the alternatives cudaenv registered removed.';
  static override examples = ['sudo <%= config.bin %> unlink', '<%= config.bin %> unlink --target ~/opt/cuda'];
  static override flags = {target: Flags.string({description: 'the link to restore', default: '/usr/local/cuda'})};

  async run(): Promise<UnlinkResult> {
    const {flags} = await this.parse(Unlink);
    const ctx = {paths: this.paths, alt: altOptionsFromEnv(), ld: ldconfigOptionsFromEnv(), argv: ['unlink', ...this.argv], env: process.env};
    const result = unlinkTarget(ctx, resolve(flags.target));
    if (!this.jsonEnabled()) {
      this.log(`${result.target}: restored ${result.restored} (was ${result.replaced})`);
      for (const r of result.removedAlternatives) this.log(`removed the alternative ${r.path} from ${r.group}`);
      if (result.ldconfig.message) this.log(result.ldconfig.message);
    }
    if (result.ldconfig.ok === false) process.exitCode = 1;
    return result;
  }
}
