import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {mkdirSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {readDriver} from '../../../src/core/doctor/driver.js';
import {findTorch, parseTorchVersionPy, torchFindings} from '../../../src/core/doctor/pytorch.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {PROC_PROPRIETARY, installVersion, makeMachine, systemToolkit, torchVersionPy, write, type Machine} from './machine.js';

describe('torch/version.py as text', () => {
  test('annotated, old-style, CPU and ROCm builds', () => {
    expect(parseTorchVersionPy("__version__ = '2.5.0+cu124'\ncuda: Optional[str] = '12.4'\nhip: Optional[str] = None\n"))
      .toEqual({version: '2.5.0+cu124', cuda: '12.4', hip: null});
    expect(parseTorchVersionPy("__version__ = '2.0.1+cu118'\ndebug = False\ncuda = '11.8'\ngit_version = 'abc'\nhip = None\n"))
      .toEqual({version: '2.0.1+cu118', cuda: '11.8', hip: null});
    expect(parseTorchVersionPy("__version__ = '2.5.0+cpu'\ncuda: Optional[str] = None\n")).toEqual({version: '2.5.0+cpu', cuda: null, hip: null});
    expect(parseTorchVersionPy('__version__ = "2.5.0+rocm6.2"\ncuda = None\nhip = "6.2.41133"\n').hip).toBe('6.2.41133');
    // Text that is not a plain literal is not evaluated.
    expect(parseTorchVersionPy("cuda = __import__('os').system('echo hi')\n").cuda).toBeNull();
  });
});

describe('PyTorch against the toolkit extensions would build with', () => {
  let tmp: {dir: string; cleanup: () => void};
  let m: Machine;
  let sp: string;
  beforeEach(() => {
    tmp = makeTempDir();
    m = makeMachine(tmp.dir);
    sp = join(tmp.dir, 'venv/lib/python3.12/site-packages');
  });
  afterEach(() => tmp.cleanup());

  const run = (label: string | null = null) => {
    const ctx = m.ctx();
    return torchFindings(ctx, findTorch([sp]), readDriver(ctx), label);
  };

  test('a different major version is an error naming torch.utils.cpp_extension', () => {
    torchVersionPy(sp, '2.5.0+cu124', '12.4');
    const tk = makeFakeToolkit(join(tmp.dir, 'cuda-11.8'), {version: '11.8.0'});
    m.env = {...m.env, CUDA_HOME: tk};
    const [f] = run();
    expect(f).toMatchObject({id: 'pytorch.toolkit-major-mismatch', severity: 'error'});
    expect(f!.title).toContain('torch.utils.cpp_extension');
    expect(f!.evidence.join('\n')).toContain(`CUDA_HOME=${tk}`);
    expect(f!.fix).toContain('cudaenv use 12.4');
  });

  test('a different minor version is a warning; the same one nothing', () => {
    torchVersionPy(sp, '2.5.0+cu124', '12.4');
    systemToolkit(m, '12.6.3', true);
    const [f] = run();
    expect(f).toMatchObject({id: 'pytorch.toolkit-minor-mismatch', severity: 'warning'});
    expect(f!.evidence.join('\n')).toContain('/usr/local/cuda');
    const same = installVersion(m, '12.4.1');
    m.env = {...m.env, PATH: `${join(same, 'bin')}:${m.env.PATH}`};
    expect(run()).toEqual([]);
  });

  test('nvcc on PATH as a wrapper or link outside the toolkit (/usr/local/bin/nvcc): the toolkit it runs is compared', () => {
    torchVersionPy(sp, '2.5.0+cu124', '12.4');
    const tk = makeFakeToolkit(join(tmp.dir, 'opt/cuda-11.8'), {version: '11.8.0'});
    // cpp_extension takes CUDA_HOME = the wrapper's grandparent, then runs $CUDA_HOME/bin/nvcc: CUDA 11.8.
    write(join(m.bin, 'nvcc'), `#!/bin/sh\nexec ${join(tk, 'bin', 'nvcc')} "$@"\n`, 0o755);
    const [f] = run();
    expect(f).toMatchObject({id: 'pytorch.toolkit-major-mismatch', severity: 'error'});
    expect(f!.evidence.join('\n')).toContain(`which runs ${tk}'s nvcc`);
    const links = join(tmp.dir, 'links', 'bin');
    mkdirSync(links, {recursive: true});
    symlinkSync(join(tk, 'bin', 'nvcc'), join(links, 'nvcc'));
    m.env = {...m.env, PATH: links};
    expect(run()[0]).toMatchObject({id: 'pytorch.toolkit-major-mismatch', severity: 'error'});
  });

  test('a CPU-only build is said as such', () => {
    torchVersionPy(sp, '2.5.0+cpu', null);
    const [f] = run();
    expect(f).toMatchObject({id: 'pytorch.cpu-build', severity: 'info'});
    expect(f!.title).toContain('CPU-only');
  });

  test('no toolkit at all: torch runs on its wheels, extensions need one', () => {
    torchVersionPy(sp, '2.5.0+cu124', '12.4');
    expect(run()[0]).toMatchObject({id: 'pytorch.no-toolkit', severity: 'info'});
  });

  test('Debian\'s python3-torch-cuda (issue 37): its CUDA libraries are system packages, not pip wheels', () => {
    // Debian trixie's torch/version.py (python3-torch-cuda 2.6.0), byte for byte, in Debian's layout:
    // /usr/lib/python3/dist-packages/torch/lib holds links to the multiarch directory, and there is no nvidia/.
    const dist = join(tmp.dir, 'usr/lib/python3/dist-packages');
    write(join(dist, 'torch', 'version.py'), "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n" +
      "__version__ = '2.6.0+debian'\ndebug = False\ncuda: Optional[str] = '12.4'\ngit_version = 'Unknown'\nhip: Optional[str] = None\nxpu: Optional[str] = None\n");
    mkdirSync(join(dist, 'torch', 'lib'));
    symlinkSync('../../../../x86_64-linux-gnu/libc10_cuda.so.2.6', join(dist, 'torch', 'lib', 'libc10_cuda.so'));
    const torch = findTorch([dist])!;
    expect(torch).toMatchObject({version: '2.6.0+debian', cuda: '12.4', libraries: 'system'});
    const [f] = torchFindings(m.ctx(), torch, undefined, null);
    expect(f!.id).toBe('pytorch.no-toolkit');
    expect(f!.title).toBe('torch 2.6.0+debian (CUDA 12.4) runs on the system\'s CUDA libraries (a distribution\'s build: they come from system packages, found through ld.so.cache); building CUDA extensions needs a toolkit and none is found');
    expect(f!.title).not.toMatch(/pip/);
    // A pip install beside it: nvidia/ holds the wheels' libraries; an older wheel bundles libcudart in torch/lib.
    torchVersionPy(sp, '2.5.0+cu124', '12.4');
    mkdirSync(join(sp, 'nvidia', 'cuda_runtime', 'lib'), {recursive: true});
    expect(findTorch([sp])!.libraries).toBe('wheels');
    const old = join(tmp.dir, 'old/site-packages');
    torchVersionPy(old, '1.13.1+cu117', '11.7');
    write(join(old, 'torch', 'lib', 'libcudart-e409450e.so.11.0'), '');
    expect(findTorch([old])!.libraries).toBe('bundled');
  });

  test('a driver below the torch build\'s CUDA floor is an error', () => {
    torchVersionPy(sp, '2.5.0+cu124', '12.4');
    write(join(m.sysroot, 'proc/driver/nvidia/version'), PROC_PROPRIETARY.replace('550.54.15', '470.82.01'));
    expect(run().map((f) => f.id)).toContain('pytorch.driver-too-old');
  });

  test('nvcc found only as a cudaenv shim makes cpp_extension look in the store root', () => {
    torchVersionPy(sp, '2.5.0+cu124', '12.4');
    installVersion(m, '12.4.1');
    write(join(m.paths.shims, 'nvcc'), '#!/bin/sh\nexit 0\n', 0o755);
    m.env = {...m.env, PATH: `${m.paths.shims}:${m.env.PATH}`};
    const [f] = run('12.4.1');
    expect(f).toMatchObject({id: 'pytorch.shim-cuda-home', severity: 'warning'});
    expect(f!.fix).toContain('cudaenv use 12.4.1');
  });

  test('the first torch in sys.path order wins', () => {
    const other = join(tmp.dir, 'user-site');
    torchVersionPy(other, '2.1.0+cu121', '12.1');
    torchVersionPy(sp, '2.5.0+cu124', '12.4');
    expect(findTorch([other, sp])?.version).toBe('2.1.0+cu121');
    symlinkSync(sp, join(tmp.dir, 'link-site'));
    expect(findTorch([join(tmp.dir, 'nope'), join(tmp.dir, 'link-site')])?.cuda).toBe('12.4');
  });
});
