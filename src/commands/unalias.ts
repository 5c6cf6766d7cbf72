import {Args} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {CudaenvError} from '../core/errors.js';
import {afterVersionsChanged} from '../core/toolkits/on-change.js';
import {removeAlias} from '../core/store/registry.js';
import {validateAliasName} from '../core/versions/spec.js';

export default class Unalias extends CudaenvCommand {
  static override summary = 'Remove an alias.';
  static override args = {name: Args.string({required: true, description: 'alias name'})};

  async run(): Promise<{name: string; removed: boolean}> {
    const {args} = await this.parse(Unalias);
    refuseForeignStore(this.paths, ['unalias', ...this.argv]);
    // The name becomes a path under aliases/: `../global` must not delete the global default.
    validateAliasName(args.name);
    if (!removeAlias(this.paths, args.name)) {
      throw new CudaenvError(`there is no alias named ${args.name}`, {hint: 'List aliases with `cudaenv ls`.'});
    }
    await afterVersionsChanged(this.paths); // shells switched through the alias notice at their next prompt
    if (!this.jsonEnabled()) this.log(`Removed alias ${args.name}.`);
    return {name: args.name, removed: true};
  }
}
