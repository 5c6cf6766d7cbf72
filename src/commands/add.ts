import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {registerWithMirror} from '../core/remote/mirror-releases.js';
import type {Registration} from '../core/toolkits/register.js';
import {describeComponents} from '../core/versions/releases.js';

export default class Add extends CudaenvCommand {
  static override summary = 'Register a toolkit the machine already has.';
  static override description = 'The version is the release version.json or version.txt states; otherwise the NVIDIA release whose component versions (nvcc --version, libcudart.so.X.Y.Z and other libraries, dist-info/ of pip wheels) the toolkit has. A toolkit newer than every release cudaenv\'s table knows is named from the manifests the mirror serves (kept in the store\'s cache for later, offline use). --as names it yourself. The store keeps a link to the directory; nothing is copied.';
  static override examples = ['<%= config.bin %> add /usr/local/cuda-12.2', '<%= config.bin %> add ~/venv/lib/python3.11/site-packages/nvidia/cuda_runtime --as 12.4.1'];
  static override args = {path: Args.string({required: true, description: 'toolkit directory'})};
  static override flags = {
    as: Flags.string({description: 'version label to register it as (MAJOR.MINOR.PATCH)'}),
    mirror: Flags.string({description: 'CUDA redist mirror whose manifests name a toolkit newer than cudaenv\'s release table: URL, file:// URL or directory (default: $CUDAENV_MIRROR, the mirror setting, or NVIDIA)'}),
  };

  async run(): Promise<Registration> {
    const {args, flags} = await this.parse(Add);
    refuseForeignStore(this.paths, ['add', ...this.argv]);
    const r = await registerWithMirror(this.paths, args.path, {as: flags.as, mirror: flags.mirror});
    if (!this.jsonEnabled()) {
      const from = r.releaseFrom && r.releaseFrom !== 'cudaenv\'s release table' ? `, as ${r.releaseFrom} lists them` : '';
      const how = r.source === 'components' && r.release ? `the NVIDIA release whose components it has: ${describeComponents(r.release)}${from}` : `version from ${r.source}`;
      this.log(`Registered CUDA ${r.label} from ${r.target} (${how}).`);
      if (r.warning) this.warn2(r.warning);
      this.log(`Use it with: cudaenv use ${r.label}`);
    }
    return r;
  }
}
