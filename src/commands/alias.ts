import {Args} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {CudaenvError} from '../core/errors.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {afterVersionsChanged} from '../core/toolkits/on-change.js';
import {listAliases, readAlias, writeAlias, ensureStoreDirs} from '../core/store/registry.js';
import {refusePrefixedVersion, resolveSpec} from '../core/selection/resolve.js';
import {parseSpec, validateAliasName} from '../core/versions/spec.js';

interface AliasInfo {
  name: string;
  spec: string;
  /** The installed version it selects now (`system`), or null. */
  resolves: string | null;
}

export default class Alias extends CudaenvCommand {
  static override summary = 'Give a spec a name (cudaenv alias stable 12.4); without arguments, list the aliases.';
  static override examples = ['<%= config.bin %> alias stable 12.4', '<%= config.bin %> use stable', '<%= config.bin %> alias', '<%= config.bin %> alias stable'];
  static override args = {
    name: Args.string({description: 'alias name (without it: every alias)'}),
    spec: Args.string({description: 'version spec or another alias (without it: what NAME names)'}),
  };

  async run(): Promise<AliasInfo | {aliases: AliasInfo[]}> {
    const {args} = await this.parse(Alias);
    // As nvm's `nvm alias`: no arguments lists, a name alone shows that alias.
    if (args.name === undefined) {
      const aliases = listAliases(this.paths).map((a) => this.info(a.name, a.spec));
      if (!this.jsonEnabled()) {
        if (aliases.length === 0) this.log('No aliases. Create one with `cudaenv alias stable 12.4`.');
        for (const a of aliases) this.log(this.describe(a));
      }
      return {aliases};
    }
    if (args.spec === undefined) {
      const spec = readAlias(this.paths, args.name);
      if (spec === undefined) {
        throw new CudaenvError(`there is no alias named ${args.name}`, {hint: 'List aliases with `cudaenv alias`; create one with `cudaenv alias NAME 12.4`.', code: 'not-found'});
      }
      const a = this.info(args.name, spec);
      if (!this.jsonEnabled()) this.log(this.describe(a));
      return a;
    }
    refuseForeignStore(this.paths, ['alias', ...this.argv]);
    validateAliasName(args.name);
    const spec = parseSpec(args.spec);
    // `cudaenv alias stable v12.4`: a version with a prefix, stored would make the alias name nothing.
    if (spec.kind === 'alias' && spec.name !== args.name) refusePrefixedVersion(resolveSpec(this.paths, spec), `alias ${args.name}`);
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

  private info(name: string, spec: string): AliasInfo {
    let resolves: string | null = null;
    try {
      const r = resolveSpec(this.paths, parseSpec(name));
      resolves = r.system ? 'system' : (r.label ?? null);
    } catch {
      // a loop or a damaged alias file: it selects nothing
    }
    return {name, spec, resolves};
  }

  private describe(a: AliasInfo): string {
    return `${a.name} -> ${a.spec}${a.resolves ? ` (now ${a.resolves})` : ' (nothing installed matches it)'}`;
  }
}
