import {Args, Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import type {CheckReport} from '../core/elf/api.js';

// Modules are imported where they are needed: `check PATH...` (the common case, and the scale
// benchmark) needs none of the version-selection ones. `check PATH...` without flags does not
// even come here: src/fast-path.ts runs it without oclif, through the same ../core/elf/check-cli.js.

export default class Check extends CudaenvCommand {
  static override summary = 'Predict what the dynamic loader will do with CUDA libraries, before anything fails.';
  static override description = 'Models glibc\'s ld.so statically (search order, ld.so.cache, symbol versions) for every shared object given, or for the active toolkit and the active Python environment\'s CUDA libraries. Exit status 0: everything would load; 1: something would fail; 2: bad usage.';
  static override examples = [
    '<%= config.bin %> check',
    '<%= config.bin %> check --cuda 12.4',
    '<%= config.bin %> check /usr/local/cuda/lib64 --tree',
    '<%= config.bin %> check $VIRTUAL_ENV/lib/python3.11/site-packages/torch/lib --ld-library-path /usr/local/cuda-12.3/lib64',
    '<%= config.bin %> check ext.cpython-311-x86_64-linux-gnu.so --exe "$(command -v python3)"',
    '<%= config.bin %> check ./wheel/torch/lib --page-size 64k',
    '<%= config.bin %> check "$VIRTUAL_ENV/lib/python3.12/site-packages/torch/lib" --gpu 12.0 --gpu 8.6',
  ];
  static override strict = false;
  static override args = {path: Args.string({description: 'shared objects or directories (every ELF shared object in them)'})};
  static override flags = {
    'ld-library-path': Flags.string({description: 'check as if LD_LIBRARY_PATH had this value ("" for unset; default: the current environment)'}),
    cuda: Flags.string({description: 'check as if this CUDA version were active'}),
    exe: Flags.string({description: 'a program put first in the symbol scope (python for extension modules)'}),
    recursive: Flags.boolean({char: 'r', description: 'also check shared objects in subdirectories'}),
    tree: Flags.boolean({description: 'print the dependency tree with the resolved path and rule on every edge'}),
    strict: Flags.boolean({description: 'fail on unversioned undefined symbols too'}),
    'runtime-loads': Flags.boolean({allowNo: true, default: true, description: 'follow what libraries dlopen at run time: libcudart\'s libcuda.so.1, NVRTC\'s builtins, cuDNN\'s parts (--no-runtime-loads: only what ld.so loads at start, as ldd -r)'}),
    'page-size': Flags.string({description: 'check for a kernel with this page size (4k, 16k, 64k: `getconf PAGESIZE` there; default: this machine\'s), e.g. libraries for a 64 KB aarch64 kernel'}),
    gpu: Flags.string({multiple: true, description: 'also say whether each library carries GPU code this GPU runs: a compute capability or architecture (8.6, sm_120; repeatable), or `auto` for this machine\'s GPUs (nvidia-smi)'}),
    cache: Flags.boolean({allowNo: true, default: true, description: 'reuse the results of files whose libraries, directories and links have not changed since the last check (--no-cache: check everything afresh)'}),
  };

  async run(): Promise<CheckReport> {
    const {flags, argv} = await this.parse(Check);
    const paths = argv as string[];
    const {chooseCheckTargets} = await import('../cli/check-targets.js');
    const choice = await chooseCheckTargets(this.paths, {paths, ldLibraryPath: flags['ld-library-path'], cuda: flags.cuda, exe: flags.exe, cache: flags.cache});
    for (const w of choice.warnings) this.warn2(w);
    const {targets, exe, python, ldLibraryPath, heading} = choice;
    const {parsePageSize, runCheckCli} = await import('../core/elf/api.js');
    const pageSize = flags['page-size'] === undefined ? undefined : parsePageSize(flags['page-size']);
    const result = await runCheckCli({
      pageSize,
      targets, python, ldLibraryPath, exe, recursive: flags.recursive, strict: flags.strict, tree: flags.tree, runtimeLoads: flags['runtime-loads'], gpus: flags.gpu,
      heading,
      storeVersionsDir: this.paths.versions, json: this.jsonEnabled(), env: process.env,
      cacheDir: flags.cache ? this.paths.checkCache : undefined,
    });
    if (result.exitCode !== 0) process.exitCode = result.exitCode;
    for (const w of result.warnings) this.warn2(w);
    if (result.text !== null) this.log(result.text);
    return result.report;
  }
}
