import {CudaenvCommand} from '../cli/base.js';
import {selfUpdate, type UpdateResult} from '../core/self/update.js';

export default class SelfUpdate extends CudaenvCommand {
  static override summary = 'Replace this cudaenv executable with the newest release (installs made by install.sh).';
  static override description = `Downloads the release's archive for this machine from the base URL install.sh installed from (CUDAENV_INSTALL_BASE overrides it), checks it against the release's SHA256SUMS, and renames the new executable over this one: a cudaenv running now keeps its file. Shell start files are rewritten by the new executable.
A cudaenv from npm, pip, pipx or uv is refused with the command that updates it.`;
  static override examples = ['<%= config.bin %> self-update', 'CUDAENV_INSTALL_BASE=https://mirror.example/cudaenv <%= config.bin %> self-update'];

  async run(): Promise<UpdateResult> {
    await this.parse(SelfUpdate);
    const result = await selfUpdate();
    if (!this.jsonEnabled()) {
      this.log(result.updated ? `${result.path}: ${result.from} -> ${result.to}` : `${result.path} is already ${result.to}, the newest at ${result.base}`);
    }
    return result;
  }
}
