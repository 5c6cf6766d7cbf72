import {Args, Flags} from '@oclif/core';
import {join, resolve} from 'node:path';
import {CudaenvCommand} from '../cli/base.js';
import {atomicWriteFile} from '../core/store/atomic-write.js';
import {resolveSpec} from '../core/versions/resolve.js';
import {parseSpec} from '../core/versions/spec.js';
import {VERSION_FILE, formatVersionFile} from '../core/versions/version-file.js';

export default class Local extends CudaenvCommand {
  static override summary = 'Pin this directory tree to a CUDA version (writes ./.cuda-version).';
  static override examples = ['<%= config.bin %> local 12.4'];
  static override args = {spec: Args.string({required: true, description: 'version spec'})};
  static override flags = {dir: Flags.string({description: 'directory to write .cuda-version in (default: the current one)'})};

  async run(): Promise<{path: string; spec: string; installed: boolean}> {
    const {args, flags} = await this.parse(Local);
    const spec = parseSpec(args.spec);
    const path = join(resolve(flags.dir ?? process.cwd()), VERSION_FILE);
    atomicWriteFile(path, formatVersionFile(spec.text));
    const r = resolveSpec(this.paths, spec);
    const installed = r.system || r.label !== undefined;
    if (!this.jsonEnabled()) {
      this.log(`Wrote ${path}: ${spec.text}`);
      if (!installed) this.warn2(`CUDA ${spec.text} is not installed yet; run \`cudaenv install ${spec.text}\``);
    }
    return {path, spec: spec.text, installed};
  }
}
