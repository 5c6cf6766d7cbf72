import {Args} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {CudaenvError} from '../core/errors.js';
import {afterVersionsChanged} from '../core/toolkits/on-change.js';
import {readGlobal, removeAlias} from '../core/store/registry.js';
import type {StorePaths} from '../core/store/paths.js';
import {resolveSpec} from '../core/selection/resolve.js';
import {parseGlobalSpec} from '../core/selection/select.js';
import {validateAliasName} from '../core/versions/spec.js';

export default class Unalias extends CudaenvCommand {
  static override summary = 'Remove an alias.';
  static override args = {name: Args.string({required: true, description: 'alias name'})};

  async run(): Promise<{name: string; removed: boolean; globalDefault: string | null}> {
    const {args} = await this.parse(Unalias);
    refuseForeignStore(this.paths, ['unalias', ...this.argv]);
    // The name becomes a path under aliases/: `../global` must not delete the global default.
    validateAliasName(args.name);
    const global = globalThrough(this.paths, args.name);
    if (!removeAlias(this.paths, args.name)) {
      throw new CudaenvError(`there is no alias named ${args.name}`, {hint: 'List aliases with `cudaenv ls`.'});
    }
    await afterVersionsChanged(this.paths); // shells switched through the alias notice at their next prompt
    if (!this.jsonEnabled()) this.log(`Removed alias ${args.name}.`);
    if (global !== undefined) {
      this.warn2(`the global default in ${this.paths.globalFile} is ${global === args.name ? global : `${global}, which led through alias ${args.name}`}: it now names no version, and \`cudaenv current\` outside a project, the shims and new shells stop with an error instead of using a version; ` +
        `set another default with \`cudaenv global 12.4\`, or \`cudaenv global --unset\` for the machine's own CUDA (system)`);
    }
    return {name: args.name, removed: true, globalDefault: global ?? null};
  }
}

/** The global default's spec when following it goes through alias NAME (before NAME is removed). */
function globalThrough(paths: StorePaths, name: string): string | undefined {
  const spec = readGlobal(paths);
  if (spec === undefined) return undefined;
  try {
    return resolveSpec(paths, parseGlobalSpec(paths, spec)).aliases.includes(name) ? spec : undefined;
  } catch {
    return undefined; // a damaged global file or an alias loop: every command already names it
  }
}
