import {Args, Flags} from '@oclif/core';
import {accessSync, constants} from 'node:fs';
import {join} from 'node:path';
import {CudaenvCommand} from '../cli/base.js';
import {CudaenvError, UsageError} from '../core/errors.js';
import {resolveSpec, notInstalledError} from '../core/versions/resolve.js';
import {parseSpec} from '../core/versions/spec.js';
import {requireSelection, describeOrigin} from '../core/versions/select.js';
import {quoteSh} from '../core/shell/quote.js';

export default class Which extends CudaenvCommand {
  static override summary = 'Print the full path of a toolkit program (nvcc, ptxas, ...) in the active version.';
  static override examples = ['<%= config.bin %> which nvcc', '<%= config.bin %> which ptxas --cuda 12.4'];
  static override args = {command: Args.string({required: true, description: 'program name'})};
  static override flags = {cuda: Flags.string({description: 'look in this version instead of the active one'})};

  async run(): Promise<{command: string; path: string; version: string}> {
    const {args, flags} = await this.parse(Which);
    if (args.command.includes('/') || args.command === '.' || args.command === '..') {
      throw new UsageError(`${JSON.stringify(args.command)} is not a program name`, 'Give a bare name such as nvcc.');
    }
    let label: string | undefined;
    let dir: string | undefined;
    if (flags.cuda) {
      const r = resolveSpec(this.paths, parseSpec(flags.cuda));
      if (!r.label) throw r.system ? new UsageError('`system` has no cudaenv toolkit; use `command -v` for the system one') : notInstalledError(r);
      label = r.label;
      dir = join(this.paths.versions, r.label);
    } else {
      const sel = requireSelection(this.paths);
      if (sel.system) {
        throw new CudaenvError(`no cudaenv version is active (${describeOrigin(sel.origin)}), so ${args.command} is whatever the system's PATH finds`, {
          hint: 'Choose one with `cudaenv use 12.4` or `cudaenv local 12.4`.', code: 'system',
        });
      }
      label = sel.label!;
      dir = sel.path!;
    }
    const path = join(dir, 'bin', args.command);
    try {
      accessSync(path, constants.X_OK);
    } catch {
      throw new CudaenvError(`CUDA ${label} has no program ${args.command} (looked for ${path})`, {
        hint: `Some components are optional: reinstall with more (cudaenv install ${label} --profile full) or check the name with \`ls ${quoteSh(join(dir, 'bin'))}\`.`,
      });
    }
    if (!this.jsonEnabled()) this.log(path);
    return {command: args.command, path, version: label};
  }
}
