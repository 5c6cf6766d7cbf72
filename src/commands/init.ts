import {Args} from '@oclif/core';
import {fileURLToPath} from 'node:url';
import {CudaenvCommand} from '../cli/base.js';
import {shellFor, SHELL_NAMES} from '../core/shell/shell.js';
import {storeRoot} from '../core/store/paths.js';

export default class Init extends CudaenvCommand {
  static override summary = 'Print the shell integration: the `cudaenv` function and the auto-switch hook.';
  static override description = 'bash: eval "$(cudaenv init bash)" in ~/.bashrc; zsh: eval "$(cudaenv init zsh)" in ~/.zshrc; fish: cudaenv init fish | source in ~/.config/fish/config.fish.';
  static override examples = ['eval "$(<%= config.bin %> init bash)"', '<%= config.bin %> init fish | source'];
  static override enableJsonFlag = false;
  static override args = {shell: Args.string({description: 'the shell', required: true, options: [...SHELL_NAMES]})};

  async run(): Promise<void> {
    const {args} = await this.parse(Init);
    const shell = await shellFor(args.shell);
    const {CUDAENV_DIR: _ignored, ...withoutDir} = process.env;
    process.stdout.write(shell.init({
      bin: fileURLToPath(new URL('../../bin/cudaenv', import.meta.url)),
      defaultDir: storeRoot(withoutDir),
    }));
  }
}
