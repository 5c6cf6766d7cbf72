import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {CudaenvError} from '../core/errors.js';
import {rehashIfMissing} from '../core/shell/rehash.js';
import {shellFor} from '../core/shell/shell.js';
import {switchCheck} from '../core/shell/switch-check.js';
import {planSwitch} from '../core/shell/transition.js';
import type {LdLibraryPathPolicy} from '../core/shell/toolkit-env.js';
import {loadSettings} from '../core/store/settings.js';
import {notInstalledError, resolveSpec} from '../core/versions/resolve.js';
import {parseSpec} from '../core/versions/spec.js';

export function integrationMissing(command: string): CudaenvError {
  return new CudaenvError(`\`cudaenv ${command}\` changes your shell, and this shell has no cudaenv integration`, {
    hint: 'Add it to your rc file: bash: eval "$(cudaenv init bash)"; zsh: eval "$(cudaenv init zsh)"; fish: cudaenv init fish | source. Or run one command: cudaenv exec --cuda SPEC -- CMD.',
    code: 'no-shell-integration',
  });
}

export default class Use extends CudaenvCommand {
  static override summary = 'Switch this shell to a CUDA version.';
  static override description = 'PATH gains the version\'s bin, CUDA_HOME and CUDA_PATH point at it, CUDAENV_VERSION names it, and LD_LIBRARY_PATH gains its lib64 unless the policy is none. `use system` restores what was there before. Needs the shell integration (cudaenv init).';
  static override examples = ['<%= config.bin %> use 12.4', '<%= config.bin %> use 12.4 --ld-library-path none', '<%= config.bin %> use system'];
  static override args = {spec: Args.string({description: 'version spec: 12, 12.4, 12.4.1, latest, system or an alias', required: true})};
  static override flags = {
    'ld-library-path': Flags.string({options: ['prepend', 'none'], description: 'whether to add the version\'s lib64 to LD_LIBRARY_PATH (default: the ldLibraryPath setting, else prepend)'}),
  };

  async run(): Promise<{version: string; path: string | null; ldLibraryPath: LdLibraryPathPolicy; check: string | null}> {
    const {args, flags} = await this.parse(Use);
    const r = resolveSpec(this.paths, parseSpec(args.spec));
    if (!r.system && !r.label) throw notInstalledError(r);
    const label = r.system ? 'system' : r.label!;
    const shellName = process.env.CUDAENV_SHELL;
    if (!shellName && !this.jsonEnabled()) throw integrationMissing('use');
    const policy = (flags['ld-library-path'] ?? (await loadSettings(this.paths)).get('ldLibraryPath') ?? 'prepend') as LdLibraryPathPolicy;
    try {
      rehashIfMissing(this.paths);
    } catch {
      // A read-only store: the shell then resolves through the CLI (`use`) only.
    }
    let check: string | null = null;
    if (label !== 'system') {
      // Run the check now, under the environment the shell is about to get, so that the
      // shell's report finds it cached and no second process starts.
      const next = planSwitch(process.env, this.paths.root, label, policy, 'pin');
      try {
        check = (await switchCheck(this.paths, label, next)).line;
      } catch (error) {
        // The switch itself does not depend on the check; the shell's report retries it.
        this.warn2(`the library check after the switch failed: ${(error as Error).message}`);
      }
    }
    const path = label === 'system' ? null : `${this.paths.versions}/${label}`;
    if (this.jsonEnabled()) return {version: label, path, ldLibraryPath: policy, check};
    const shell = await shellFor(shellName!);
    process.stdout.write(shell.use(label, policy));
    return {version: label, path, ldLibraryPath: policy, check};
  }
}
