/**
 * The one line after a switch and the machine's GPU (issue 33, item 4): said only when a library
 * that loads carries no code the GPU runs, with the fix; otherwise the line is the loader's. The
 * library is built by the real nvcc for sm_86 only; the GPU is what an nvidia-smi on PATH says.
 */
import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {pathsFor} from '../../../src/core/store/paths.js';
import {switchCheck} from '../../../src/core/shell/switch-check.js';
import {planSwitch} from '../../../src/core/shell/transition.js';
import {makeTempDir, type TempDir} from '../../helpers/tmp.js';
import {makeStore} from './shell-harness.js';
import {describeIf} from '../../helpers/skip.js';
import {NEEDS} from '../../helpers/capabilities.js';

const NVCC = '/usr/local/cuda/bin/nvcc';
const haveNvcc = existsSync(NVCC) && spawnSync(NVCC, ['--version'], {stdio: 'ignore'}).status === 0;

describeIf(haveNvcc, NEEDS.devToolkit('/usr/local/cuda'))('the check after a switch and the GPU', () => {
  let tmp: TempDir;
  let store: string;
  let venv: string;
  const smi = (cap: string) => {
    const bin = join(tmp.dir, `bin-${cap}`);
    mkdirSync(bin, {recursive: true});
    writeFileSync(join(bin, 'nvidia-smi'), `#!/bin/sh\necho '0, Some GPU, ${cap}'\n`);
    chmodSync(join(bin, 'nvidia-smi'), 0o755);
    return `${bin}:/usr/bin:/bin`;
  };

  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-switchcheck-gpu-');
    store = join(tmp.dir, 'store');
    for (const s of ['a', 'b', 'c']) await makeStore(join(store, s), ['12.4.1']);
    venv = join(tmp.dir, 'venv');
    const lib = join(venv, 'lib', 'python3.11', 'site-packages', 'nvidia', 'k', 'lib');
    mkdirSync(lib, {recursive: true});
    writeFileSync(join(tmp.dir, 'k.cu'), '__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\nextern "C" void launch(float *x) { k<<<1, 32>>>(x); }\n');
    const r = spawnSync(NVCC, ['-shared', '-Xcompiler', '-fPIC', '-o', join(lib, 'libk.so'), join(tmp.dir, 'k.cu'), '-gencode', 'arch=compute_86,code=sm_86'], {encoding: 'utf8'});
    if (r.status !== 0) throw new Error(`nvcc: ${r.stderr}`);
  }, 300_000);
  afterAll(() => tmp.cleanup());

  test('an RTX 50 gets the error and the fix; an sm_86 GPU, or no nvidia-smi, the loader\'s line', async () => {
    // A store each: the line is cached per version, LD_LIBRARY_PATH and what was checked, not per GPU.
    const line = async (path: string, s: string) =>
      (await switchCheck(pathsFor(join(store, s)), '12.4.1', planSwitch({PATH: path, VIRTUAL_ENV: venv}, join(store, s), '12.4.1', 'none', 'pin'))).line;
    expect(await line(smi('12.0'), 'a')).toBe("cudaenv: CUDA 12.4.1 and the Python environment's CUDA libraries: no kernel image for sm_120: libk.so carries no code for sm_120: SASS for sm_86 and no PTX; use a build of libk.so that includes sm_120, or rebuild it with `-gencode arch=compute_120,code=sm_120` (TORCH_CUDA_ARCH_LIST=12.0 for a PyTorch extension)");
    // libk.so is built by nvcc with cudart_static, which dlopens libcuda.so.1 (issue 43): on a machine
    // without the driver's library that is said after the verdict, as a warning.
    const resolves = /: all \d+ librar(y resolves|ies resolve)(; but libk\.so dlopens libcuda\.so\.1 at the first CUDA call, and this machine has no NVIDIA driver to provide it)?$/;
    expect(await line(smi('8.6'), 'b')).toMatch(resolves);
    expect(await line('/usr/bin:/bin', 'c')).toMatch(resolves);
  });
});
