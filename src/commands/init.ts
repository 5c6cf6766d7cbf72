import {Args} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {initCode} from '../cli/hook-commands.js';
import {rcLine, SHELL_NAMES} from '../core/shell/shell.js';

export default class Init extends CudaenvCommand {
  static override summary = 'Print the shell integration: the `cudaenv` function and the auto-switch hook.';
  static override description = `One line in the rc file. bash (~/.bashrc): ${rcLine('bash')}
zsh (~/.zshrc): ${rcLine('zsh')}
fish (~/.config/fish/config.fish): ${rcLine('fish')}
The first part sources the start file that every \`cudaenv init\` writes into the store (shell/init.SHELL), so a new shell starts no Node.js process; the second runs \`cudaenv init\` when that file is missing or names an installation that has gone. \`eval "$(cudaenv init bash)"\` alone works too, at the cost of starting Node.js in every new shell.`;
  static override examples = [rcLine('bash'), rcLine('fish')];
  static override enableJsonFlag = false;
  static override args = {shell: Args.string({description: 'the shell', required: true, options: [...SHELL_NAMES]})};

  async run(): Promise<void> {
    const {args} = await this.parse(Init);
    process.stdout.write(await initCode(args.shell));
  }
}
