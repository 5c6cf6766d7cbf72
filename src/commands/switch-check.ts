import {Args} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {switchCheckFor} from '../cli/hook-commands.js';

/** Run by the shell hook after a switch whose check result is not cached. */
export default class SwitchCheck extends CudaenvCommand {
  static override hidden = true;
  static override summary = 'Check the libraries of the version this shell just switched to (used by the shell hook).';
  static override args = {label: Args.string({required: true, description: 'installed version label'})};

  async run(): Promise<{version: string; line: string; cached: boolean}> {
    const {args} = await this.parse(SwitchCheck);
    const result = await switchCheckFor(args.label);
    if (!this.jsonEnabled()) process.stderr.write(`${result.line}\n`);
    return {version: result.label, line: result.line, cached: result.cached};
  }
}
