import {Args, Flags} from '@oclif/core';
import {accessSync, constants} from 'node:fs';
import {join, resolve} from 'node:path';
import {firstOnPath} from '../core/system/python-env.js';
import {CudaenvCommand} from '../cli/base.js';
import {CudaenvError, UsageError} from '../core/errors.js';
import {resolveSpec, notInstalledError} from '../core/selection/resolve.js';
import {parseSpec} from '../core/versions/spec.js';
import {requireSelection, describeOrigin} from '../core/selection/select.js';
import {quoteSh} from '../core/text/quote.js';
import {describeVersion} from '../core/store/registry.js';

export default class Which extends CudaenvCommand {
  static override summary = 'Print the full path of a toolkit program (nvcc, ptxas, ...) in the active version.';
  static override examples = ['<%= config.bin %> which nvcc', '<%= config.bin %> which ptxas --cuda 12.4'];
  static override args = {command: Args.string({required: true, description: 'program name'})};
  static override flags = {cuda: Flags.string({description: 'look in this version instead of the active one'})};

  async run(): Promise<{command: string; path: string; version: string; store?: string}> {
    const {args, flags} = await this.parse(Which);
    if (args.command.includes('/') || args.command === '.' || args.command === '..') {
      throw new UsageError(`${JSON.stringify(args.command)} is not a program name`, 'Give a bare name such as nvcc.');
    }
    let label: string | undefined;
    let dir: string | undefined;
    if (flags.cuda) {
      const r = resolveSpec(this.paths, parseSpec(flags.cuda));
      if (r.system) return this.systemProgram(args.command, '--cuda system');
      if (!r.label) throw notInstalledError(r);
      label = r.label;
      dir = join(this.paths.versions, r.label);
    } else {
      const sel = requireSelection(this.paths);
      if (sel.system) return this.systemProgram(args.command, describeOrigin(sel.origin));
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
    // The store it comes from: the user's, or a site store beneath it (issue 45).
    const store = describeVersion(this.paths, label)?.store ?? this.paths.root;
    if (!this.jsonEnabled() && store !== this.paths.root) this.warn2(`CUDA ${label} comes from the site store ${store}`);
    return {command: args.command, path, version: label, store};
  }

  /** Under `system`, the program is what PATH finds, cudaenv's shims left out (they would run the selection again). */
  private systemProgram(command: string, why: string): {command: string; path: string; version: string} {
    const dirs = (process.env.PATH ?? '').split(':').filter((d) => d !== '' && resolve(d) !== this.paths.shims);
    const path = firstOnPath([command], dirs.join(':'));
    if (!path) {
      throw new CudaenvError(`no cudaenv version is active (${why}) and the system has no ${command} on PATH`, {
        hint: 'Choose a version with `cudaenv use 12.4`, or add the system toolkit\'s bin/ to PATH.', code: 'system',
      });
    }
    if (!this.jsonEnabled()) this.log(path);
    return {command, path, version: 'system'};
  }
}
