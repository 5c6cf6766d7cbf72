import {Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {shellFor} from '../core/shell/shells.js';
import {integrationMissing} from '../core/shell/use.js';
import {loadSettings} from '../core/store/settings.js';

export default class Deactivate extends CudaenvCommand {
  static override summary = 'Undo every switch in this shell: PATH, LD_LIBRARY_PATH, CUDA_HOME, CUDA_PATH and CUDAENV_VERSION return to what they were before the first one.';
  static override description = 'A variable that was unset is unset again, an empty one is empty again; entries you added meanwhile stay. One line on stderr says what changed (--quiet, or `cudaenv config quiet true`, leaves it out). The auto-switch hook acts again at the next change of directory. Needs the shell integration (cudaenv init).';
  static override examples = ['<%= config.bin %> deactivate', '<%= config.bin %> deactivate --quiet'];
  static override enableJsonFlag = false;
  static override flags = {quiet: Flags.boolean({char: 'q', description: 'no line saying what changed'})};

  async run(): Promise<void> {
    const {flags} = await this.parse(Deactivate);
    const shellName = process.env.CUDAENV_SHELL;
    if (!shellName) throw integrationMissing('deactivate');
    const quiet = flags.quiet || (await loadSettings(this.paths)).get('quiet') === true;
    process.stdout.write((await shellFor(shellName)).deactivate({quiet}));
  }
}
