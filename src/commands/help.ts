import {Args, Command, Help} from '@oclif/core';
import {closest} from '../core/text/suggest.js';

/** `cudaenv help [COMMAND]`: as nvm, pyenv and mise have it; the same text as `--help` and `-h`. */
export default class HelpCommand extends Command {
  static override summary = 'Show help for cudaenv or for one command.';
  static override examples = ['<%= config.bin %> help', '<%= config.bin %> help use'];
  static override strict = false;
  static override args = {command: Args.string({description: 'the command to explain'})};

  async run(): Promise<void> {
    const {argv} = await this.parse(HelpCommand);
    const words = argv as string[];
    const known = this.config.commands.flatMap((c) => [c.id, ...c.aliases]);
    const name = words.join(':');
    if (words.length > 0 && !known.includes(name) && !this.config.findTopic(name)) {
      const guess = closest(words[0]!, known.filter((id) => !id.includes(':')));
      process.stderr.write(`cudaenv: there is no command ${JSON.stringify(words.join(' '))}\n${guess ? `Did you mean \`cudaenv help ${guess}\`? ` : ''}See \`cudaenv help\` for the list of commands.\n`);
      this.exit(2);
    }
    await new Help(this.config).showHelp(words);
  }
}
