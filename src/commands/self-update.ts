import {Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {selfUpdate, type UpdateResult} from '../core/self/update.js';

export default class SelfUpdate extends CudaenvCommand {
  static override summary = 'Replace this cudaenv executable with the newest release (installs made by install.sh).';
  static override description = `Downloads the release's SHA256SUMS and its signature from the base URL install.sh installed from (CUDAENV_INSTALL_BASE overrides it) and checks the signature with cudaenv's release key, built into this executable. If this executable is the release's, that is all. Otherwise it downloads the archive for this machine, checks it against the signed SHA256SUMS, and renames the new executable over this one: a cudaenv running now keeps its file. Shell start files are rewritten by the new executable. Nothing downloaded runs before these checks pass.
A release older than this cudaenv is refused unless --allow-downgrade is given. A cudaenv from npm, pip, pipx or uv is refused with the command that updates it.`;
  static override examples = ['<%= config.bin %> self-update', 'CUDAENV_INSTALL_BASE=https://mirror.example/cudaenv <%= config.bin %> self-update', '<%= config.bin %> self-update --allow-downgrade'];
  static override flags = {
    'allow-downgrade': Flags.boolean({description: 'install the release at the base URL even if it is older than this cudaenv'}),
  };

  async run(): Promise<UpdateResult> {
    const {flags} = await this.parse(SelfUpdate);
    const result = await selfUpdate(process.execPath, process.env, {allowDowngrade: flags['allow-downgrade']});
    if (!this.jsonEnabled()) {
      this.log(result.updated ? `${result.path}: ${result.from} -> ${result.to}` : `${result.path} is already ${result.to}, the release at ${result.base}`);
    }
    return result;
  }
}
