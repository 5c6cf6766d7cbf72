import {describe, expect, test} from '@jest/globals';
import {existsSync, mkdirSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {defaultDeps} from '../../../src/core/doctor/engine.js';
import {renderReport, runDoctor} from '../../../src/core/doctor/index.js';
import {DOWNLOADED, NEEDS} from '../../helpers/capabilities.js';
import {describeIf} from '../../helpers/skip.js';
import {fakePython, installVersion, setGlobal, torchVersionPy, withMachine, write, type Machine} from './machine.js';

/**
 * doctor and the machine's GPUs (issue 33, item 3): the active toolkit that cannot compile for
 * them, and PyTorch libraries that carry no code for them, each with what to use instead. The
 * GPUs come from nvidia-smi (a script on the machine's PATH here), the driver from /proc.
 */
const proc = (version: string) => `NVRM version: NVIDIA UNIX x86_64 Kernel Module  ${version}  Tue Jul  8 18:29:08 UTC 2025\nGCC version:  gcc version 12.2.0\n`;
function gpus(m: Machine, ...lines: string[]): void {
  write(join(m.bin, 'nvidia-smi'), `#!/bin/sh\ncase "$*" in *compute_cap*) printf '%s\\n' ${lines.map((l) => `'${l}'`).join(' ')} ;; *) exit 1 ;; esac\n`, 0o755);
}

describe('the active toolkit against the GPU', () => {
  let m: Machine;
  withMachine('each', (machine) => {
    m = machine;
  });

  test('CUDA 13 on a V100: it dropped sm_70; 12.9 is the newest that compiles for it, or an installed 12.x', async () => {
    write(join(m.sysroot, 'proc/driver/nvidia/version'), proc('580.65.06'));
    installVersion(m, '13.0.2');
    setGlobal(m, '13.0.2');
    gpus(m, '0, Tesla V100-SXM2-16GB, 7.0', '1, Tesla V100-SXM2-16GB, 7.0');
    const report = await runDoctor(m.ctx(), defaultDeps);
    const f = report.findings.filter((x) => x.id === 'gpu.toolkit-cannot-compile');
    expect(f).toHaveLength(1);
    expect(f[0]).toMatchObject({
      severity: 'warning',
      title: "CUDA 13.0.2's nvcc cannot compile for sm_70 (GPU 0, Tesla V100-SXM2-16GB): CUDA 13.0 dropped sm_70 (CUDA 12.9 is the newest release that compiles for it)",
      fix: 'cudaenv install 12.9 && cudaenv use 12.9',
    });
    expect(report.facts.gpu.gpus.map((g) => g.capability)).toEqual(['7.0']);
    const text = renderReport(report);
    expect(text).toMatch(/^GPU {9}sm_70 \(GPU 0, Tesla V100-SXM2-16GB\)$/m);
    installVersion(m, '12.4.1');
    const again = await runDoctor(m.ctx(), defaultDeps);
    expect(again.findings.find((x) => x.id === 'gpu.toolkit-cannot-compile')?.fix).toBe('cudaenv use 12.4.1');
  });

  test('CUDA 12.4 on an RTX 5090: it knows no sm_120; 12.8 is the first release that does', async () => {
    write(join(m.sysroot, 'proc/driver/nvidia/version'), proc('575.57.08'));
    installVersion(m, '12.4.1');
    setGlobal(m, '12.4.1');
    gpus(m, '0, NVIDIA GeForce RTX 5090, 12.0');
    const report = await runDoctor(m.ctx(), defaultDeps);
    expect(report.findings.find((x) => x.id === 'gpu.toolkit-cannot-compile')).toMatchObject({
      title: "CUDA 12.4.1's nvcc cannot compile for sm_120 (GPU 0, NVIDIA GeForce RTX 5090): it knows no sm_120 (CUDA 12.8 is the first release that does)",
      fix: 'cudaenv install 12.8 && cudaenv use 12.8',
    });
  });

  test('no driver, or no nvidia-smi: no GPU section, no finding', async () => {
    installVersion(m, '13.0.2');
    setGlobal(m, '13.0.2');
    gpus(m, '0, Tesla V100-SXM2-16GB, 7.0');
    const report = await runDoctor(m.ctx(), defaultDeps);
    expect(report.findings.filter((x) => x.id.startsWith('gpu.'))).toEqual([]);
    expect(report.facts.gpu).toMatchObject({gpus: [], reason: 'no NVIDIA driver is loaded'});
    expect(renderReport(report)).not.toMatch(/^GPU /m);
  });
});

const NCCL = join(DOWNLOADED, 'trixie-gpu-code', 'usr', 'lib', 'x86_64-linux-gnu', 'libnccl.so.2');

describeIf(existsSync(NCCL), NEEDS.realCudaLibs)('PyTorch libraries against the GPU', () => {
  let m: Machine;
  withMachine('each', (machine) => {
    m = machine;
  });

  test('a torch/lib whose CUDA code stops at sm_90 on an RTX 5090: the error, and the PyTorch index that carries sm_120', async () => {
    write(join(m.sysroot, 'proc/driver/nvidia/version'), proc('575.57.08'));
    gpus(m, '0, NVIDIA GeForce RTX 5090, 12.0');
    const site = join(m.root, 'venv', 'lib', 'python3.12', 'site-packages');
    torchVersionPy(site, '2.6.0+cu124', '12.4');
    mkdirSync(join(site, 'torch', 'lib'), {recursive: true});
    // A real library with SASS for sm_50-sm_90 and no PTX, under PyTorch's name (Debian's NCCL 2.22).
    symlinkSync(NCCL, join(site, 'torch', 'lib', 'libtorch_cuda.so'));
    fakePython(m, [site]);
    const report = await runDoctor(m.ctx(), defaultDeps);
    const f = report.findings.find((x) => x.id === 'pytorch.no-kernel-image');
    expect(f).toMatchObject({
      severity: 'error',
      title: 'no kernel image for sm_120: libtorch_cuda.so carries no code for sm_120: SASS for sm_50, sm_60, sm_61, sm_70, sm_80, sm_90 and no PTX (sm_120 (GPU 0, NVIDIA GeForce RTX 5090))',
      fix: 'install a PyTorch build that carries sm_120: `pip install torch --index-url https://download.pytorch.org/whl/cu130` (torch 2.9 and later, CUDA 13.0)',
    });
    expect(report.facts.gpu.libraries).toEqual([expect.objectContaining({path: join(site, 'torch', 'lib', 'libtorch_cuda.so'), runs: {'12.0': 'none'}})]);
    expect(renderReport(report)).toMatch(/^GPU {9}sm_120 \(GPU 0, NVIDIA GeForce RTX 5090\); 1 Python CUDA library carries GPU code$/m);
  });
});
