import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {registerToolkit, type Registration} from '../core/store/register.js';

export default class Add extends CudaenvCommand {
  static override summary = 'Register a toolkit the machine already has.';
  static override description = 'The version comes from version.json, version.txt, bin/nvcc --version or the libcudart.so file name, in that order; --as names it yourself. The store keeps a link to the directory; nothing is copied.';
  static override examples = ['<%= config.bin %> add /usr/local/cuda-12.2', '<%= config.bin %> add ~/venv/lib/python3.11/site-packages/nvidia/cuda_runtime --as 12.4.1'];
  static override args = {path: Args.string({required: true, description: 'toolkit directory'})};
  static override flags = {as: Flags.string({description: 'version label to register it as (MAJOR.MINOR.PATCH)'})};

  async run(): Promise<Registration> {
    const {args, flags} = await this.parse(Add);
    refuseForeignStore(this.paths, ['add', ...this.argv]);
    const r = await registerToolkit(this.paths, args.path, flags.as);
    if (!this.jsonEnabled()) {
      this.log(`Registered CUDA ${r.label} from ${r.target} (version from ${r.source}).`);
      this.log(`Use it with: cudaenv use ${r.label}`);
    }
    return r;
  }
}
