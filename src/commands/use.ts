import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import type {LdLibraryPathPolicy} from '../core/shell/toolkit-env.js';
import {integrationMissing, runUse} from '../core/shell/use.js';

export {integrationMissing};

export default class Use extends CudaenvCommand {
  static override summary = 'Switch this shell to a CUDA version (without one: the version the nearest .cuda-version selects).';
  static override description = 'PATH gains the version\'s bin, CUDA_HOME and CUDA_PATH point at it, CUDAENV_VERSION names it, and LD_LIBRARY_PATH gains its lib64 unless the policy is none. `use system` restores what was there before. One line on stderr says what changed (--quiet, or `cudaenv config quiet true`, leaves it out). Needs the shell integration (cudaenv init); without it, --json prints the change as data to apply (`applied: false`).';
  static override examples = ['<%= config.bin %> use 12.4', '<%= config.bin %> use', '<%= config.bin %> use 12.4 --ld-library-path none', '<%= config.bin %> use system', '<%= config.bin %> use 12.4 --json'];
  static override args = {spec: Args.string({description: 'version spec: 12, 12.4, 12.4.1, latest, system or an alias (default: what the nearest .cuda-version selects; without one, an error)'})};
  // --json is handled here, not by oclif: inside the shell integration the JSON object is part
  // of the shell code (printed after the switch), so oclif must not print a second one.
  static override enableJsonFlag = false;
  static override flags = {
    'ld-library-path': Flags.string({options: ['prepend', 'none'], description: 'whether to add the version\'s lib64 to LD_LIBRARY_PATH (default: the ldLibraryPath setting, else prepend)'}),
    quiet: Flags.boolean({char: 'q', description: 'no line saying what changed'}),
    json: Flags.boolean({description: 'the switch as JSON: inside the shell integration after switching (applied: true); elsewhere the environment change to apply (applied: false)'}),
  };

  override jsonEnabled(): boolean {
    return this.argv.includes('--json');
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Use);
    const out = await runUse({
      paths: this.paths, spec: args.spec, policy: flags['ld-library-path'] as LdLibraryPathPolicy | undefined,
      quiet: flags.quiet, json: flags.json, env: process.env,
    }, (m) => this.warn2(m));
    process.stdout.write(out.stdout);
  }
}
