import {Flags} from '@oclif/core';
import {createInterface} from 'node:readline/promises';
import {CudaenvCommand} from '../cli/base.js';
import {UsageError} from '../core/errors.js';
import {implode, implodePlan, implodeRefusal, type ImplodePlan} from '../core/store/implode.js';
import {refuseForeignStore} from '../core/store/store-owner.js';

export default class Implode extends CudaenvCommand {
  static override summary = 'Remove cudaenv\'s store: every installed toolkit, settings, shims (as mise implode).';
  static override description = 'Registered toolkits are only unlinked. Asks first at a terminal; --yes skips the question; --dry-run lists what would go and removes nothing. Then remove the `cudaenv init` line from your rc file and uninstall the package (npm uninstall -g cudaenv).';
  static override examples = ['<%= config.bin %> implode --dry-run', '<%= config.bin %> implode', '<%= config.bin %> implode --yes'];
  static override flags = {
    yes: Flags.boolean({char: 'y', description: 'do not ask'}),
    'dry-run': Flags.boolean({char: 'n', description: 'list what would be removed; remove nothing'}),
  };

  async run(): Promise<ImplodePlan & {dryRun: boolean}> {
    const {flags} = await this.parse(Implode);
    const plan = implodePlan(this.paths);
    if (flags['dry-run']) {
      // Reads only: no store-owner refusal, no question; what implode would refuse is refused here too.
      const refusal = implodeRefusal(this.paths, plan);
      if (refusal) throw refusal;
      if (!this.jsonEnabled()) {
        if (!plan.exists) this.log(`${plan.store} does not exist: implode would remove nothing.`);
        else {
          this.log(`implode would delete ${plan.store}, with:`);
          this.log(`  installed toolkits: ${plan.installed.length > 0 ? plan.installed.map((v) => `${this.paths.versions}/${v}`).join(', ') : 'none'}`);
          this.log(`  registered toolkits (only their links go; the directories stay): ${plan.registered.length > 0 ? plan.registered.map((r) => `${r.version} -> ${r.target}`).join(', ') : 'none'}`);
          this.log(`  the shims (${this.paths.shims}), settings, aliases, the global default and the download cache`);
          this.log('Nothing was removed (--dry-run).');
        }
      }
      return {...plan, dryRun: true};
    }
    refuseForeignStore(this.paths, ['implode', ...this.argv]);
    if (!flags.yes) {
      if (!process.stdin.isTTY) throw new UsageError(`implode deletes ${plan.store} and asks first`, 'Run it at a terminal, or add --yes.');
      const rl = createInterface({input: process.stdin, output: process.stderr});
      const what = [plan.installed.length > 0 ? `installed CUDA ${plan.installed.join(', ')}` : null, plan.registered.length > 0 ? `the registrations of ${plan.registered.map((r) => r.version).join(', ')} (their directories stay)` : null].filter(Boolean).join('; ');
      const answer = await rl.question(`Delete ${plan.store}${what ? ` (${what})` : ''}? [y/N] `);
      rl.close();
      if (!/^y(es)?$/i.test(answer.trim())) {
        this.log('Nothing deleted.');
        return {...plan, dryRun: false};
      }
    }
    implode(this.paths, plan);
    if (!this.jsonEnabled()) {
      this.log(plan.exists ? `Deleted ${plan.store}.` : `${plan.store} did not exist.`);
      this.log(`To finish: remove the \`cudaenv init\` line from ~/.bashrc, ~/.zshrc or ~/.config/fish/config.fish (and ${this.paths.shims} from PATH where you added it),`);
      this.log('then `npm uninstall -g cudaenv` (with the --prefix you installed with), or delete the clone.');
    }
    return {...plan, dryRun: false};
  }
}
