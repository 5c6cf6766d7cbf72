import {join, resolve} from 'node:path';
import {Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {writeModulefiles, type ModulefileFormat, type ModulefilesResult} from '../core/cluster/modulefiles.js';
import type {LdLibraryPathPolicy} from '../core/shell/toolkit-env.js';
import {loadSettings} from '../core/store/settings.js';

export default class Modulefiles extends CudaenvCommand {
  static override summary = 'Write modulefiles (Lmod\'s cuda/<version>.lua, or Tcl for Environment Modules) for every installed version.';
  static override description = 'Each sets PATH, CUDA_HOME, CUDA_PATH and (per the ldLibraryPath setting) LD_LIBRARY_PATH as `cudaenv use` does; only one cuda module is loaded at a time. cuda/12.4 and cuda/12 name the highest installed match. --format tcl writes Tcl modulefiles (cuda/<version>), which Environment Modules (RHEL\'s `module`) and Lmod both read. Users then run: module use DIR; module load cuda/12.4';
  static override examples = ['<%= config.bin %> modulefiles', '<%= config.bin %> modulefiles --dir /shared/modulefiles', '<%= config.bin %> modulefiles --format tcl --dir /etc/modulefiles'];
  static override flags = {
    dir: Flags.string({description: 'where to write (default: modulefiles/ in the store)'}),
    format: Flags.string({options: ['lua', 'tcl'], default: 'lua', description: 'lua: Lmod only; tcl: Environment Modules and Lmod'}),
    'ld-library-path': Flags.string({options: ['prepend', 'none'], description: 'override the ldLibraryPath setting'}),
  };

  async run(): Promise<ModulefilesResult> {
    const {flags} = await this.parse(Modulefiles);
    if (!flags.dir) refuseForeignStore(this.paths, ['modulefiles', ...this.argv]);
    const dir = resolve(flags.dir ?? join(this.paths.root, 'modulefiles'));
    const policy = (flags['ld-library-path'] ?? (await loadSettings(this.paths)).get('ldLibraryPath') ?? 'prepend') as LdLibraryPathPolicy;
    const format = flags.format as ModulefileFormat;
    const result = writeModulefiles(this.paths, dir, policy, format);
    if (!this.jsonEnabled()) {
      if (result.written.length === 0) this.log('No CUDA versions installed: no modulefiles written.');
      for (const w of result.written) this.log(`wrote ${w.file}`);
      for (const r of result.removed) {
        const other = r.endsWith('.lua') !== (format === 'lua');
        this.log(`removed ${r} (${other ? `the ${format === 'lua' ? 'tcl' : 'lua'} format's, replaced by ${format}` : 'version no longer installed'})`);
      }
      if (result.written.length > 0) this.log(`Use them with: module use ${dir}; module load cuda/${result.written.at(-1)!.version}`);
      for (const w of result.warnings) this.warn2(w);
    }
    return result;
  }
}
