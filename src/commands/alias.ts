import {Args} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {afterVersionsChanged} from '../core/store/on-change.js';
import {writeAlias, ensureStoreDirs} from '../core/store/registry.js';
import {resolveSpec} from '../core/versions/resolve.js';
import {parseSpec, validateAliasName} from '../core/versions/spec.js';

export default class Alias extends CudaenvCommand {
  static override summary = 'Give a spec a name (cudaenv alias stable 12.4).';
  static override examples = ['<%= config.bin %> alias stable 12.4', '<%= config.bin %> use stable'];
  static override args = {
    name: Args.string({required: true, description: 'alias name'}),
    spec: Args.string({required: true, description: 'version spec or another alias'}),
  };

  async run(): Promise<{name: string; spec: string; resolves: string | null}> {
    const {args} = await this.parse(Alias);
    refuseForeignStore(this.paths, ['alias', ...this.argv]);
    validateAliasName(args.name);
    const spec = parseSpec(args.spec);
    ensureStoreDirs(this.paths);
    writeAlias(this.paths, args.name, spec.text);
    // Resolve after writing so a loop through the new alias is caught and undone.
    let resolves: string | null = null;
    try {
      const r = resolveSpec(this.paths, parseSpec(args.name));
      resolves = r.system ? 'system' : (r.label ?? null);
    } catch (error) {
      const {removeAlias} = await import('../core/store/registry.js');
      removeAlias(this.paths, args.name);
      throw error;
    }
    await afterVersionsChanged(this.paths);
    if (!this.jsonEnabled()) {
      this.log(`${args.name} -> ${spec.text}${resolves ? ` (now ${resolves})` : ' (nothing installed matches it yet)'}`);
    }
    return {name: args.name, spec: spec.text, resolves};
  }
}
