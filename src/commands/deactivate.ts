import {CudaenvCommand} from '../cli/base.js';
import {shellFor} from '../core/shell/shell.js';
import {integrationMissing} from './use.js';

export default class Deactivate extends CudaenvCommand {
  static override summary = 'Undo every switch in this shell: PATH, LD_LIBRARY_PATH, CUDA_HOME, CUDA_PATH and CUDAENV_VERSION return to what they were before the first one.';
  static override description = 'A variable that was unset is unset again, an empty one is empty again; entries you added meanwhile stay. The auto-switch hook acts again at the next change of directory. Needs the shell integration (cudaenv init).';
  static override examples = ['<%= config.bin %> deactivate'];
  static override enableJsonFlag = false;

  async run(): Promise<void> {
    await this.parse(Deactivate);
    const shellName = process.env.CUDAENV_SHELL;
    if (!shellName) throw integrationMissing('deactivate');
    process.stdout.write((await shellFor(shellName)).deactivate());
  }
}
