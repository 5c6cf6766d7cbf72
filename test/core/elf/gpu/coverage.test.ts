import {describe, expect, test} from '@jest/globals';
import {gpuReport, libraryVerdict} from '../../../../src/core/elf/gpu/coverage.js';
import {parseGpu, parseNvidiaSmi} from '../../../../src/core/elf/gpu/gpu-targets.js';
import {pytorchIndexesFor} from '../../../../src/core/elf/gpu/pytorch-wheels.js';
import type {DeviceCodeSummary} from '../../../../src/core/elf/report-types.js';
import {driverForPtx, ptxForDriver, releasesCompilingFor} from '../../../../src/core/versions/gpu-targets.js';

/**
 * The rules of "will this GPU run it" (issue 33, item 2), one case per rule of NVIDIA's binary and
 * PTX compatibility, on summaries as the device-code reader gives them. The summaries of real
 * files are checked against cuobjdump in cuobjdump-oracle.test.ts; check-gpu.test.ts runs the CLI.
 */
const lib = (...modules: string[][]): DeviceCodeSummary => ({modules: modules.map((images) => ({images, count: 1})), relocatable: 0});
const runs = (code: DeviceCodeSummary, gpu: string, driver: string | null = null) => libraryVerdict('/x/libk.so', code, gpu, driver)?.runs;

describe('SASS', () => {
  test('runs on the same major with an equal or higher minor, never across majors', () => {
    expect(runs(lib(['sm_80']), '8.0')).toBe('sass');
    expect(runs(lib(['sm_80']), '8.6')).toBe('sass');
    expect(runs(lib(['sm_80']), '8.9')).toBe('sass');
    expect(runs(lib(['sm_86']), '8.0')).toBe('none');
    expect(runs(lib(['sm_80']), '9.0')).toBe('none');
    // A V100 (7.0) with a CUDA 13 build (sm_75 and up): nothing.
    expect(runs(lib(['sm_75', 'sm_80', 'sm_90']), '7.0')).toBe('none');
    // A GTX 1080 Ti (6.1): sm_60 covers it, a build without 6.x does not.
    expect(runs(lib(['sm_60', 'sm_70']), '6.1')).toBe('sass');
    expect(runs(lib(['sm_70', 'sm_75']), '6.1')).toBe('none');
  });

  test('sm_XYa only on X.Y; sm_XYf within its family like plain SASS', () => {
    expect(runs(lib(['sm_90a']), '9.0')).toBe('sass');
    expect(runs(lib(['sm_100a']), '10.3')).toBe('none');
    expect(runs(lib(['sm_100f']), '10.3')).toBe('sass');
    expect(runs(lib(['sm_103f']), '10.0')).toBe('none');
    expect(runs(lib(['sm_120f']), '12.1')).toBe('sass');
    expect(runs(lib(['sm_100f']), '12.0')).toBe('none');
  });

  test('the best image is named: the highest compatible architecture', () => {
    expect(libraryVerdict('/x/libk.so', lib(['sm_50', 'sm_80', 'sm_86', 'compute_90@8.4']), '8.9', null)?.by).toBe('sm_86');
  });
});

describe('PTX', () => {
  test('JIT-compiled for any GPU at or above its virtual architecture; a and f restrict it', () => {
    // An RTX 5090 (12.0) with PyTorch 2.6 cu124's compute_90 PTX: runs through the JIT.
    expect(runs(lib(['sm_80', 'sm_90', 'compute_90@8.4']), '12.0')).toBe('ptx');
    expect(runs(lib(['compute_90@8.4']), '8.6')).toBe('none');
    expect(runs(lib(['compute_90a@8.4']), '10.0')).toBe('none');
    expect(runs(lib(['compute_90a@8.4']), '9.0')).toBe('ptx');
    expect(runs(lib(['compute_120f@9.0']), '12.1')).toBe('ptx');
    expect(runs(lib(['compute_100f@9.0']), '12.0')).toBe('none');
  });

  test('only by a driver that knows its PTX ISA version', () => {
    const code = lib(['sm_80', 'compute_90@9.0']);
    expect(runs(code, '12.0', '550.54.15')).toBe('ptx-too-new');
    expect(runs(code, '12.0', '580.65.06')).toBe('ptx');
    const v = libraryVerdict('/x/libk.so', code, '12.0', null)!;
    expect(v.runs).toBe('ptx');
    expect(v.driverNeeded).toBe('580.65.06');
    expect(driverForPtx('8.4')).toEqual({driver: '550.54.14', cuda: '12.4'});
  });

  // Issue 42, item 8: PTX of 12.4 (ISA 8.4, known to 550) JIT-compiled for sm_120 was said to need driver 550;
  // no driver before R570 supports a Blackwell GPU at all, so none before it compiles anything for one.
  test('for a Blackwell GPU (sm_100, sm_120) a driver that supports the GPU: R570+, not only one that knows the PTX ISA', () => {
    const code = lib(['sm_80', 'sm_90', 'compute_90@8.4']);
    for (const gpu of ['12.0', '10.0']) {
      const v = libraryVerdict('/x/libk.so', code, gpu, null)!;
      expect(v).toMatchObject({runs: 'ptx', driverNeeded: '570.26'});
      expect(v.note).toContain(`a driver that supports sm_${gpu.replace('.', '')}: 570.26 or newer, R570+ (CUDA 12.8's), which also knows PTX ISA 8.4`);
    }
    // On a GPU 550 supports (Hopper, 9.0 with compute_80 PTX only), the PTX ISA is what matters.
    expect(libraryVerdict('/x/libk.so', lib(['compute_80@8.4']), '9.0', null)).toMatchObject({runs: 'ptx', driverNeeded: '550.54.14'});
    expect(ptxForDriver('560.35.03')).toEqual({ptx: '8.5', cuda: '12.6'});
  });
});

describe('a library of many modules', () => {
  test('some modules without code for the GPU: partial, not a failure; none with it: a failure naming what it has', () => {
    const cublasLike: DeviceCodeSummary = {modules: [{images: ['sm_80', 'sm_90'], count: 20}, {images: ['sm_90a'], count: 5}], relocatable: 0};
    const v = libraryVerdict('/x/libcublasLt.so.12', cublasLike, '8.6', null)!;
    expect(v).toMatchObject({runs: 'partial', modules: 25, modulesWithout: 5});
    const report = gpuReport([{path: '/x/libcublasLt.so.12', code: cublasLike}], [parseGpu('8.6')], null);
    expect(report.ok).toBe(true);
    const torch = gpuReport([{path: '/venv/torch/lib/libtorch_cuda.so', code: lib(['sm_50', 'sm_60', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'sm_90'])}], [parseGpu('sm_120')], null);
    expect(torch.ok).toBe(false);
    expect(torch.problems[0]!.summary).toBe('no kernel image for sm_120: libtorch_cuda.so carries no code for sm_120: SASS for sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90 and no PTX');
    expect(torch.problems[0]!.fix).toMatch(/^install a PyTorch build that carries sm_120: `pip install torch --index-url https:\/\/download\.pytorch\.org\/whl\/cu130`/);
  });

  test('cuFFT, whose registered module says nothing, is not judged; relocatable code alone is no verdict', () => {
    expect(runs(lib(['sm_52']), '8.0')).toBe('none');
    expect(libraryVerdict('/x/libcufft.so.11', lib(['sm_52']), '8.0', null)?.runs).toBe('not-judged');
    expect(libraryVerdict('/x/libk.a', {modules: [], relocatable: 4}, '8.0', null)).toBeNull();
  });
});

describe('GPUs and tables', () => {
  test('--gpu takes capabilities and architecture names; nonsense is bad usage', () => {
    expect(['8.6', 'sm_86', '86', 'compute_86', 'SM_86'].map((g) => parseGpu(g).capability)).toEqual(['8.6', '8.6', '8.6', '8.6', '8.6']);
    expect(parseGpu('sm_120').capability).toBe('12.0');
    expect(parseGpu('sm_90a').name).toBe('sm_90');
    for (const bad of ['', 'ampere', '8', '8.66', 'sm_1']) expect(() => parseGpu(bad)).toThrow(/not a GPU architecture/);
  });

  test("nvidia-smi's CSV, with a GPU an old driver gives no capability for", () => {
    const r = parseNvidiaSmi('0, NVIDIA GeForce RTX 5090, 12.0\n1, NVIDIA A100-SXM4-80GB, 8.0\n2, Tesla K80, [N/A]\n');
    expect(r.gpus.map((g) => [g.capability, g.source])).toEqual([['12.0', 'nvidia-smi: GPU 0, NVIDIA GeForce RTX 5090'], ['8.0', 'nvidia-smi: GPU 1, NVIDIA A100-SXM4-80GB']]);
    expect(r.reason).toMatch(/GPU 2 \(Tesla K80\).*--gpu/);
  });

  test('which releases compile for a GPU, and which PyTorch indexes carry it', () => {
    expect(releasesCompilingFor('7.0').at(-1)).toBe('12.9');
    expect(releasesCompilingFor('12.0')[0]).toBe('12.8');
    expect(pytorchIndexesFor('12.0').map((p) => p.index)).toEqual(['cu130', 'cu129', 'cu128']);
    expect(pytorchIndexesFor('6.1').map((p) => p.index)).toEqual(['cu126', 'cu124', 'cu121', 'cu118']);
    expect(pytorchIndexesFor('7.0').map((p) => p.index)[0]).toBe('cu129');
  });
});
