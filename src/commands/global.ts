import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {afterVersionsChanged} from '../core/toolkits/on-change.js';
import {UsageError} from '../core/errors.js';
import {ensureStoreDirs, readGlobal, writeGlobal} from '../core/store/registry.js';
import {refusePrefixedVersion, resolveSpec} from '../core/selection/resolve.js';
import {parseGlobalSpec} from '../core/selection/select.js';
import {parseSpec} from '../core/versions/spec.js';

export default class Global extends CudaenvCommand {
  static override summary = 'Set (or show) the default CUDA version of this user.';
  static override examples = ['<%= config.bin %> global 12.4', '<%= config.bin %> global', '<%= config.bin %> global --unset'];
  static override args = {spec: Args.string({description: 'version spec'})};
  static override flags = {unset: Flags.boolean({description: 'remove the global default'})};

  async run(): Promise<{global: string | null; resolves: string | null}> {
    const {args, flags} = await this.parse(Global);
    if (args.spec || flags.unset) refuseForeignStore(this.paths, ['global', ...this.argv]);
    if (flags.unset && args.spec) throw new UsageError('give either a spec or --unset, not both');
    if (flags.unset) {
      writeGlobal(this.paths, undefined);
      if (!this.jsonEnabled()) this.log('Removed the global default; the machine\'s own CUDA (system) applies.');
      return {global: null, resolves: 'system'};
    }
    if (!args.spec) {
      const spec = readGlobal(this.paths) ?? null;
      const r = spec ? resolveSpec(this.paths, parseGlobalSpec(this.paths, spec)) : undefined;
      const resolves = r ? (r.system ? 'system' : (r.label ?? null)) : 'system';
      if (!this.jsonEnabled()) this.log(spec ? `${spec}${resolves && resolves !== spec ? ` (${resolves})` : ''}` : 'system (no global default set)');
      return {global: spec, resolves};
    }
    const spec = parseSpec(args.spec);
    const r = resolveSpec(this.paths, spec);
    refusePrefixedVersion(r, 'global');
    ensureStoreDirs(this.paths);
    writeGlobal(this.paths, spec.text);
    await afterVersionsChanged(this.paths);
    const resolves = r.system ? 'system' : (r.label ?? null);
    if (!this.jsonEnabled()) {
      this.log(`Global default: ${spec.text}${resolves && resolves !== spec.text ? ` (${resolves})` : ''}`);
      if (!resolves) this.warn2(r.missingAlias !== undefined
        ? `no alias or version named ${r.missingAlias} yet; create it with \`cudaenv alias ${r.missingAlias} 12.4\``
        : `CUDA ${spec.text} is not installed yet; run \`cudaenv install ${r.target?.text ?? spec.text}\``);
    }
    return {global: spec.text, resolves};
  }
}
