import {CudaenvCommand} from '../cli/base.js';
import {runCurrent} from '../fast-path.js';

export default class Current extends CudaenvCommand {
  static override summary = 'Show the active CUDA version and what selected it.';
  static override description = 'Precedence: CUDAENV_VERSION, then the nearest .cuda-version, then the global default, then system. Exit status 1 when the selected version is not installed.';
  static override examples = ['<%= config.bin %> current', '<%= config.bin %> current --json'];
  // Output is written directly so that this command and the start-up fast path agree byte for byte.
  static override enableJsonFlag = true;

  async run(): Promise<void> {
    await this.parse(Current);
    runCurrent(this.jsonEnabled());
  }
}
