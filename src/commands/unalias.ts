import {Args} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {CudaenvError} from '../core/errors.js';
import {removeAlias} from '../core/store/registry.js';

export default class Unalias extends CudaenvCommand {
  static override summary = 'Remove an alias.';
  static override args = {name: Args.string({required: true, description: 'alias name'})};

  async run(): Promise<{name: string; removed: boolean}> {
    const {args} = await this.parse(Unalias);
    if (!removeAlias(this.paths, args.name)) {
      throw new CudaenvError(`there is no alias named ${args.name}`, {hint: 'List aliases with `cudaenv ls`.'});
    }
    if (!this.jsonEnabled()) this.log(`Removed alias ${args.name}.`);
    return {name: args.name, removed: true};
  }
}
