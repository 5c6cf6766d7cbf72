import {Args} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {REMOTE_COMMANDS, VERSION_COMMANDS, type CompletionModel} from '../core/completion/model.js';
import {bashCompletion, fishCompletion, zshCompletion} from '../core/completion/scripts.js';
import {releaseTable} from '../core/versions/releases.js';
import {sortVersionLabels} from '../core/versions/version.js';

export default class Completion extends CudaenvCommand {
  static override summary = 'Print the shell completion script (commands, flags, installed versions, aliases, releases).';
  static override description = 'bash: eval "$(cudaenv completion bash)" in ~/.bashrc; zsh: eval "$(cudaenv completion zsh)" in ~/.zshrc; fish: cudaenv completion fish | source in ~/.config/fish/config.fish. install completes the releases the last ls-remote or install listed (else the releases cudaenv knows).';
  static override examples = ['eval "$(<%= config.bin %> completion bash)"', '<%= config.bin %> completion fish | source'];
  static override enableJsonFlag = false;
  static override args = {shell: Args.string({required: true, options: ['bash', 'zsh', 'fish'], description: 'the shell'})};

  async run(): Promise<void> {
    const {args} = await this.parse(Completion);
    const model: CompletionModel = {
      commands: this.config.commands
        .filter((c) => !c.hidden)
        .sort((a, b) => a.id.localeCompare(b.id))
        .map((c) => ({
          // `conda:hook:install` is typed `conda hook install` (the topic separator is a space).
          name: c.id.split(':').join(' '),
          summary: c.summary ?? '',
          flags: Object.entries(c.flags).filter(([, f]) => !f.hidden).map(([name, f]) => ({name, summary: f.summary ?? f.description ?? '', takesValue: f.type === 'option'})),
        })),
      versionCommands: VERSION_COMMANDS,
      remoteCommands: REMOTE_COMMANDS,
      knownReleases: sortVersionLabels(Object.keys(releaseTable())),
      defaultStore: this.paths.root,
    };
    const script = args.shell === 'bash' ? bashCompletion(model) : args.shell === 'zsh' ? zshCompletion(model) : fishCompletion(model);
    process.stdout.write(script);
  }
}
