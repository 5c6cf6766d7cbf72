import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../../../cli/base.js';
import {installHook, type InstallResult} from '../../../core/conda/hook.js';
import {loadSettings} from '../../../core/store/settings.js';
import type {LdLibraryPathPolicy} from '../../../core/shell/toolkit-env.js';

export default class CondaHookInstall extends CudaenvCommand {
  static override summary = 'Make a conda environment switch to a CUDA version when it is activated.';
  static override description = 'Writes activate.d and deactivate.d scripts (sh, fish, csh) into the environment. Activation puts the version\'s bin first on PATH, sets CUDA_HOME and CUDA_PATH and, per the LD_LIBRARY_PATH policy, prepends its lib64; deactivation restores every variable exactly. Before installing, the loader model checks that the environment\'s own CUDA libraries (lib/, torch/lib, nvidia/*/lib) would still bind correctly; if not it refuses (--force installs anyway). Installing again replaces the previous hook.';
  static override examples = [
    '<%= config.bin %> conda hook install 12.4',
    '<%= config.bin %> conda hook install -n torch-env --ld-library-path none',
    '<%= config.bin %> conda hook install 12.1 -p ~/miniforge3/envs/old --force',
  ];
  static override args = {spec: Args.string({description: 'version spec (default: what .cuda-version selects here, then the active version)'})};
  static override flags = {
    name: Flags.string({char: 'n', description: 'environment name, as `conda env list` shows it', exclusive: ['prefix']}),
    prefix: Flags.string({char: 'p', description: 'environment path', exclusive: ['name']}),
    'ld-library-path': Flags.string({options: ['prepend', 'none'], description: 'whether activation prepends the version\'s lib64 to LD_LIBRARY_PATH (default: the ldLibraryPath setting, else prepend)'}),
    force: Flags.boolean({description: 'install even if the check finds libraries the hook would break'}),
  };

  async run(): Promise<InstallResult> {
    const {args, flags} = await this.parse(CondaHookInstall);
    const policy = (flags['ld-library-path'] ?? (await loadSettings(this.paths)).get('ldLibraryPath') ?? 'prepend') as LdLibraryPathPolicy;
    const result = await installHook({
      paths: this.paths, spec: args.spec, name: flags.name, prefix: flags.prefix, policy, force: flags.force ?? false,
    });
    if (!this.jsonEnabled()) {
      const where = result.name ? `${result.name} (${result.prefix})` : result.prefix;
      if (result.checkError) this.warn2(`installed without the library check, which failed (--force): ${result.checkError}`);
      else if (result.forced) {
        this.warn2(`installed despite ${result.check!.problems.length} library problem(s) the hook causes (--force):`);
        for (const p of result.check!.problems) process.stderr.write(`  ${p.summary}\n`);
      }
      this.log(`${result.replaced ? 'replaced the' : 'installed a'} conda hook in ${where}: CUDA ${result.version} (${result.chosenBy})` +
        (result.replaced && result.replaced.version !== result.version ? `, was ${result.replaced.version}` : ''));
      this.log(`LD_LIBRARY_PATH: ${result.ldLibraryPath === 'prepend' ? `${result.version}'s libraries first` : 'left alone'}` +
        (result.check ? `; ${result.forced ? `${result.check.problems.length} library problem(s) of the environment overridden with --force (listed above)` : result.check.targets.length === 0 ? 'the environment has no libraries to check' : 'the environment\'s CUDA libraries still resolve'}` : ''));
      this.log('Takes effect at the next activation (conda activate ENV).');
    }
    return result;
  }
}
