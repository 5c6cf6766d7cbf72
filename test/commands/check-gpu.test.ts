import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import type {CheckReport} from '../../src/core/elf/report-types.js';
import {DEBIAN_CUOBJDUMP, DOWNLOADED, NEEDS} from '../helpers/capabilities.js';
import {cliEnv, REPO_ROOT, runCli} from '../helpers/cli.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir, type TempDir} from '../helpers/tmp.js';

/**
 * `cudaenv check --gpu` (issue 33, items 2 and 4): the coverage in the text, in --json and in
 * --tree, on Debian's real CUDA 12.4 libraries (bash test/fixtures/fetch-cuda-libs.sh) and on
 * libraries the real nvcc builds here for one architecture.
 */
const LIBS = join('usr', 'lib', 'x86_64-linux-gnu');
const CUSPARSE = join(DOWNLOADED, 'trixie', LIBS, 'libcusparse.so.12');
const NCCL = join(DOWNLOADED, 'trixie-gpu-code', LIBS, 'libnccl.so.2');
const CUFFT = join(DOWNLOADED, 'trixie-gpu-code', LIBS, 'libcufft.so.11');
const haveReal = [CUSPARSE, NCCL, CUFFT].every((f) => existsSync(f));
const NVCC = '/usr/local/cuda/bin/nvcc';
const haveNvcc = existsSync(NVCC) && spawnSync(NVCC, ['--version'], {stdio: 'ignore'}).status === 0;

let tmp: TempDir;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-check-gpu-');
});
afterAll(() => tmp.cleanup());

const json = (args: string[]) => {
  const r = runCli(['check', ...args, '--json'], {env: cliEnv(join(tmp.dir, 'store'))});
  return {...r, report: JSON.parse(r.stdout) as CheckReport};
};

describeIf(haveReal, NEEDS.realCudaLibs)("Debian's CUDA 12.4 libraries", () => {
  test('--json: per library and GPU, the code that runs, the PTX the driver must compile, and what cannot run', () => {
    const {report} = json([CUSPARSE, NCCL, CUFFT, '--gpu', '12.0', '--gpu', 'sm_86']);
    const gpu = report.gpu!;
    expect(gpu.gpus.map((g) => [g.capability, g.source])).toEqual([['12.0', '--gpu 12.0'], ['8.6', '--gpu sm_86']]);
    expect(gpu.driver).toBeNull();
    const byName = (suffix: string) => gpu.libraries.find((l) => l.path.endsWith(suffix))!;
    const cusparse = byName('libcusparse.so.12');
    expect(cusparse.sass).toEqual(['sm_50', 'sm_52', 'sm_60', 'sm_61', 'sm_70', 'sm_75', 'sm_80', 'sm_86', 'sm_89', 'sm_90']);
    expect(cusparse.ptx).toEqual(['compute_80@8.4', 'compute_90@8.4']);
    // An RTX 50 runs most of cuSPARSE 12.4 by JIT-compiling its compute_90 PTX (with a driver that
    // supports sm_120: R570, issue 42 item 8); of its 133 modules 14 hold no kernel (nvcc's module, and 13
    // whose LZ4-compressed cubins are all empty: cuobjdump -res-usage names no function in them; issue 42,
    // item 6: not counted), and 23 of the 119 others carry only SASS (sm_90 kernels among them): partly, no failure.
    expect(cusparse.modulesWithoutKernels).toBe(14);
    expect(cusparse.verdicts[0]).toMatchObject({gpu: '12.0', runs: 'partial', by: 'compute_90@8.4', modules: 119, modulesWithout: 23, driverNeeded: '570.26'});
    expect(cusparse.verdicts[1]).toMatchObject({gpu: '8.6', runs: 'partial', by: 'sm_86', modulesWithout: 7});
    // NCCL 2.22 has no sm_120 and no PTX: the error of issue 33.
    const nccl = byName('libnccl.so.2');
    expect(nccl.verdicts.map((v) => v.runs)).toEqual(['none', 'sass']);
    expect(byName('libcufft.so.11').verdicts[0]!.runs).toBe('not-judged');
    expect(gpu.ok).toBe(false);
    expect(report.ok).toBe(false);
    expect(gpu.problems).toEqual([{
      path: NCCL, gpu: '12.0',
      summary: 'no kernel image for sm_120: libnccl.so.2 carries no code for sm_120: SASS for sm_50, sm_60, sm_61, sm_70, sm_80, sm_90 and no PTX',
      fix: 'use libnccl of CUDA 12.8 or newer (the first release that compiles for sm_120), or an NCCL release built for it',
    }]);
  });

  test('--gpu auto: every GPU nvidia-smi lists, each model once', () => {
    const bin = join(tmp.dir, 'smi-bin');
    mkdirSync(bin, {recursive: true});
    writeFileSync(join(bin, 'nvidia-smi'), "#!/bin/sh\nprintf '0, NVIDIA GeForce RTX 5090, 12.0\\n1, NVIDIA A100-SXM4-80GB, 8.0\\n2, NVIDIA A100-SXM4-80GB, 8.0\\n'\n");
    chmodSync(join(bin, 'nvidia-smi'), 0o755);
    const r = runCli(['check', NCCL, '--gpu', 'auto', '--json'], {env: cliEnv(join(tmp.dir, 'store'), {PATH: `${bin}:${process.env.PATH}`})});
    const gpu = (JSON.parse(r.stdout) as CheckReport).gpu!;
    expect(gpu.gpus).toEqual([
      {capability: '12.0', name: 'sm_120', source: 'nvidia-smi: GPU 0, NVIDIA GeForce RTX 5090'},
      {capability: '8.0', name: 'sm_80', source: 'nvidia-smi: GPU 1, NVIDIA A100-SXM4-80GB'},
    ]);
    expect(gpu.libraries[0]!.verdicts.map((v) => [v.gpu, v.runs])).toEqual([['12.0', 'none'], ['8.0', 'sass']]);
    // This machine's driver (from /proc/driver/nvidia/version, when one is loaded) compiles the PTX.
    if (!existsSync('/proc/driver/nvidia/version')) expect(gpu.driver).toBeNull();
  });

  test('--tree shows each library\'s architectures; without --gpu there is no GPU part', () => {
    const r = runCli(['check', CUSPARSE, '--tree'], {env: cliEnv(join(tmp.dir, 'store'))});
    expect(r.stdout.split('\n')[0]).toBe(`${CUSPARSE} {GPU code: sm_50 sm_52 sm_60 sm_61 sm_70 sm_75 sm_80 sm_86 sm_89 sm_90 compute_80 compute_90}`);
    expect(r.stdout).not.toMatch(/GPU code, checked for/);
    expect(json([CUSPARSE]).report.gpu).toBeUndefined();
  });

  test('the device code is read once per file identity and kept in the store beside the verdicts', () => {
    const store = join(tmp.dir, 'cached-store');
    const first = runCli(['check', CUSPARSE, '--gpu', '9.0', '--json'], {env: cliEnv(store)});
    const file = join(store, 'cache', 'check', 'device-code', 'device-code.json');
    const cached = JSON.parse(readFileSync(file, 'utf8')) as {files: Record<string, {id: string}>};
    expect(Object.keys(cached.files)).toContain(CUSPARSE);
    // A stored answer is what is used: change it, and the next check says what the cache says.
    const data = JSON.parse(readFileSync(file, 'utf8'));
    data.files[CUSPARSE].s.modules = [{images: ['sm_75'], count: 1}];
    writeFileSync(file, JSON.stringify(data));
    const second = JSON.parse(runCli(['check', CUSPARSE, '--gpu', '9.0', '--json'], {env: cliEnv(store)}).stdout) as CheckReport;
    expect(second.gpu!.libraries[0]!.sass).toEqual(['sm_75']);
    expect(JSON.parse(first.stdout).gpu.libraries[0].sass).toContain('sm_90');
    // --no-cache reads the file again.
    const fresh = JSON.parse(runCli(['check', CUSPARSE, '--gpu', '9.0', '--json', '--no-cache'], {env: cliEnv(store)}).stdout) as CheckReport;
    expect(fresh.gpu!.libraries[0]!.sass).toContain('sm_90');
  });
});

describeIf(haveReal, NEEDS.realCudaLibs)('without oclif', () => {
  test('check PATH --gpu VALUE takes the fast path and says exactly what the oclif command says', () => {
    const env = cliEnv(join(tmp.dir, 'store'));
    const script = `require(require.resolve('@oclif/core', {paths: [${JSON.stringify(REPO_ROOT)}]}))` +
      `.execute({args: process.argv.slice(1), dir: ${JSON.stringify(join(REPO_ROOT, 'bin', 'run.cjs'))},` +
      ` loadOptions: {root: ${JSON.stringify(REPO_ROOT)}, userPlugins: false}})`;
    for (const args of [[CUSPARSE, NCCL, '--gpu', '12.0', '--gpu=8.6'], [CUSPARSE, '--no-cache', '--gpu', 'sm_90']]) {
      const fast = runCli(['check', ...args], {env});
      const oclif = spawnSync(process.execPath, ['-e', script, 'check', ...args], {cwd: REPO_ROOT, env, encoding: 'utf8'});
      expect([fast.status, fast.stdout, fast.stderr]).toEqual([oclif.status, oclif.stdout, oclif.stderr]);
    }
  });
});

describe('--gpu values', () => {
  test('a value that is no architecture is bad usage; auto without nvidia-smi says so', () => {
    const bad = runCli(['check', '/bin/true', '--gpu', 'ampere'], {env: cliEnv(join(tmp.dir, 'store'))});
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--gpu ampere: not a GPU architecture/);
    const hasSmi = spawnSync('nvidia-smi', ['-L'], {stdio: 'ignore'}).status === 0;
    if (!hasSmi) {
      const auto = runCli(['check', '/bin/true', '--gpu', 'auto', '--json'], {env: cliEnv(join(tmp.dir, 'store'))});
      expect(auto.stderr).toMatch(/--gpu auto: nvidia-smi is not installed/);
      expect((JSON.parse(auto.stdout) as CheckReport).gpu).toMatchObject({gpus: [], ok: true, libraries: []});
    }
  });
});

describeIf(haveNvcc, NEEDS.devToolkit('/usr/local/cuda'))('a library nvcc builds for sm_86 only', () => {
  let so = '';
  beforeAll(() => {
    writeFileSync(join(tmp.dir, 'k.cu'), '__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\nextern "C" void launch(float *x) { k<<<1, 32>>>(x); }\n');
    so = join(tmp.dir, 'libk.so');
    const r = spawnSync(NVCC, ['-shared', '-Xcompiler', '-fPIC', '-o', so, join(tmp.dir, 'k.cu'), '-gencode', 'arch=compute_86,code=sm_86'], {encoding: 'utf8'});
    if (r.status !== 0) throw new Error(`nvcc: ${r.stderr}`);
  }, 300_000);

  test('runs on 8.6 and 8.9, not on 8.0 or 12.0: exit status, the last line, the fix', () => {
    const env = cliEnv(join(tmp.dir, 'store'));
    const ok = runCli(['check', so, '--gpu', '8.6', '--gpu', '8.9'], {env});
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/sm_86: the library with GPU code runs \(1 as SASS\)/);
    // libk.so carries cudart_static, which dlopens libcuda.so.1 at the first CUDA call (issue 43): a warning where no driver is.
    const noDriver = !existsSync('/proc/driver/nvidia/version') && !existsSync('/sys/module/nvidia');
    expect(ok.stdout.trim().split('\n').at(-1)).toBe(noDriver
      ? 'all 1 library resolves; but libk.so dlopens libcuda.so.1 at the first CUDA call, and this machine has no NVIDIA driver to provide it'
      : 'all 1 library resolves');
    const no = runCli(['check', so, '--gpu', '8.0', '--gpu', 'sm_120'], {env});
    expect(no.status).toBe(1);
    expect(no.stdout.trim().split('\n').at(-1)).toBe(
      'no kernel image for sm_80: libk.so carries no code for sm_80: SASS for sm_86 and no PTX; use a build of libk.so that includes sm_80, or rebuild it with `-gencode arch=compute_80,code=sm_80` (TORCH_CUDA_ARCH_LIST=8.0 for a PyTorch extension)');
    expect(no.stdout).toMatch(/error: no kernel image for sm_120: libk\.so/);
  });
});

// Issue 42, item 6: nvcc adds to every shared library a second module whose cubin holds no kernel
// (cuobjdump lists its ELF with no Function). For a GPU that runs the library through its PTX,
// check said "1 of 2 modules carry no code": a module without kernels is not a module that fails.
// Debian's cuobjdump 12.4 (nvidia-cuda-toolkit), whose nvdisasm lies beside it: `-sass` lists each kernel as "Function : NAME".
const CUOBJDUMP = [DEBIAN_CUOBJDUMP].find((f) => existsSync(f));
describeIf(haveNvcc && CUOBJDUMP !== undefined, !haveNvcc ? NEEDS.devToolkit('/usr/local/cuda') : NEEDS.realCudaLibs)('the module without kernels nvcc adds', () => {
  let so = '';
  beforeAll(() => {
    writeFileSync(join(tmp.dir, 'p.cu'), '__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\nextern "C" void launch(float *x) { k<<<1, 32>>>(x); }\n');
    so = join(tmp.dir, 'libp.so');
    const r = spawnSync(NVCC, ['-shared', '-Xcompiler', '-fPIC', '-o', so, join(tmp.dir, 'p.cu'), '-gencode', 'arch=compute_75,code=[sm_75,compute_75]'], {encoding: 'utf8'});
    if (r.status !== 0) throw new Error(`nvcc: ${r.stderr}`);
  }, 300_000);

  test('cuobjdump lists two SASS images, one with no function; check counts one module, which runs on sm_86 through its PTX', () => {
    const sass = spawnSync(CUOBJDUMP!, ['-sass', so], {encoding: 'utf8', env: {...process.env, PATH: `${join(CUOBJDUMP!, '..')}:${process.env.PATH ?? ''}`}}).stdout;
    const elves = sass.split('Fatbin elf code:').slice(1);
    expect(elves).toHaveLength(2);
    expect(elves.filter((e) => !/Function :/.test(e.split('Fatbin ptx code:')[0]!))).toHaveLength(1);
    const env = cliEnv(join(tmp.dir, 'store'));
    const r = runCli(['check', so, '--gpu', '8.6', '--json'], {env});
    const lib = (JSON.parse(r.stdout) as CheckReport).gpu!.libraries[0]!;
    expect(lib).toMatchObject({modules: 1, modulesWithoutKernels: 1});
    expect(lib.verdicts[0]).toMatchObject({gpu: '8.6', runs: 'ptx', modulesWithout: 0});
    const text = runCli(['check', so, '--gpu', '8.6'], {env});
    expect(text.status).toBe(0);
    expect(text.stdout).not.toMatch(/carry no code/);
    expect(text.stdout).toMatch(/note: libp\.so its module runs on sm_86 only as PTX \(compute_75@/);
  });
});

describeIf(haveReal, NEEDS.realCudaLibs)('a library not judged', () => {
  test('cuFFT says it is not judged, and why, in the text', () => {
    const r = runCli(['check', CUFFT, '--gpu', '8.6'], {env: cliEnv(join(tmp.dir, 'store'))});
    expect(r.stdout).toMatch(/sm_86: the library with GPU code not judged/);
    expect(r.stdout).toContain('note: libcufft.so.11 is not judged: cuFFT loads its kernels itself; its one registered module (an sm_52 image) says nothing about the GPUs it supports');
  });
});
