import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, readFileSync, statSync, truncateSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {readDeviceCode, type KernelImage} from '../../../../../src/core/elf/read/device-code/index.js';
import {archOnly, cuobjdump, mine} from './cuobjdump-listing.js';
import {DEBIAN_CUOBJDUMP, DOWNLOADED, NEEDS} from '../../../../helpers/capabilities.js';
import {describeIf, testIf} from '../../../../helpers/skip.js';
import {makeTempDir, type TempDir} from '../../../../helpers/tmp.js';

/**
 * The device-code reader against the real cuobjdump (issue 33, item 1): every SASS and PTX image
 * of real CUDA libraries from Debian (bash test/fixtures/fetch-cuda-libs.sh) and of objects built
 * here by the real nvcc for chosen -gencode sets, listed as `cuobjdump --list-elf` and
 * `--list-ptx` list them. Two cuobjdumps: Debian trixie's of CUDA 12.4, which reads the `a` of a
 * cubin from elsewhere (it prints sm_90 for CUDA 13's sm_90a), compared by kind, order and
 * architecture; and NVIDIA's of CUDA 13.1 (Ubuntu resolute's cuda-cuobjdump-13-1, fetched only where
 * CUDAENV_UBUNTU_MIRROR names Ubuntu's archive: Debian has CUDA 12.4's only), which names
 * arch-specific SASS (sm_90a) and family PTX (sm_120f) as CUDA 13 does, compared name by name.
 *
 * cuobjdump stops with "cuobjdump fatal : Invalid ELF" part-way through some of NVIDIA's own
 * libraries (libcublas, libnccl: each version at another image); there the images it listed
 * before stopping must be exactly the reader's first ones, and the test counts those it could
 * not compare.
 */
const CUOBJDUMP_13 = join(DOWNLOADED, 'cuobjdump-13.1', 'usr', 'local', 'cuda-13.1', 'bin', 'cuobjdump');
const CUOBJDUMP_12 = DEBIAN_CUOBJDUMP;
const LIBS = join('usr', 'lib', 'x86_64-linux-gnu');
const REAL = [
  join(DOWNLOADED, 'trixie', LIBS, 'libcusparse.so.12'),
  join(DOWNLOADED, 'trixie', LIBS, 'libnvJitLink.so.12'),
  join(DOWNLOADED, 'trixie', LIBS, 'libcudart.so.12'),
  join(DOWNLOADED, 'bookworm', LIBS, 'libcusparse.so.11'),
  join(DOWNLOADED, 'trixie-gpu-code', LIBS, 'libcublas.so.12'),
  join(DOWNLOADED, 'trixie-gpu-code', LIBS, 'libcufft.so.11'),
  join(DOWNLOADED, 'trixie-gpu-code', LIBS, 'libnccl.so.2'),
];
/** CUDAENV_FETCH_LARGE=1 bash test/fixtures/fetch-cuda-libs.sh: 1.6 GB, kept out of CI. */
const LARGE = ['libcublasLt.so.12', 'libtorch_cuda.so.2.6', 'libc10_cuda.so.2.6', 'libtorch_cuda_linalg.so.2.6']
  .map((f) => join(DOWNLOADED, 'trixie-gpu-code-large', LIBS, f));
const NVCC = '/usr/local/cuda/bin/nvcc';

const haveOracle = existsSync(CUOBJDUMP_12);
const have13 = existsSync(CUOBJDUMP_13);
const haveReal = haveOracle && REAL.every((f) => existsSync(f));
const haveLarge = haveOracle && LARGE.every((f) => existsSync(f));
const haveNvcc = existsSync(NVCC) && spawnSync(NVCC, ['--version'], {stdio: 'ignore'}).status === 0;
const NEEDS_13 = NEEDS.ubuntuOnly('cuobjdump 13.1');
/** The cuobjdumps compared with, and whether each is compared name by name (13.1) or by architecture (Debian's 12.4). */
type Oracle = readonly [tool: string, exact: boolean];
const ORACLE_12: Oracle = [CUOBJDUMP_12, false];
const ORACLE_13: Oracle = [CUOBJDUMP_13, true];
/** Every cuobjdump this machine has. */
const ORACLES: Oracle[] = [...(have13 ? [ORACLE_13] : []), ...(haveOracle ? [ORACLE_12] : [])];

interface Tally {
  compared: number;
  beyondFatal: number;
  disagreements: string[];
}

function compare(file: string, tally: Tally, oracles: Oracle[]): void {
  const listings = new Map(oracles.map(([tool]) => [tool, cuobjdump(tool, file)]));
  for (const mode of ['elf', 'ptx'] as const) {
    const ours = mine(file, mode);
    for (const [tool, exact] of oracles) {
      const theirs = {...listings.get(tool)![mode]};
      // Debian's 12.4 cuobjdump ends NCCL's listing after its first fat binary, exit 0 and no
      // word, and lists none of its PTX; 13.1 lists the same first images and then stops with
      // "Invalid ELF". Compared as a listing cut short, and counted as such.
      if (!exact && theirs.fatal === null && /libnccl\.so/.test(file)) theirs.fatal = 'stops after the first fat binary';
      const a = exact ? ours : archOnly(ours);
      const b = exact ? theirs.lines : archOnly(theirs.lines);
      const prefix = theirs.fatal === null ? a : a.slice(0, b.length);
      if (JSON.stringify(prefix) !== JSON.stringify(b) || (theirs.fatal === null && a.length !== b.length)) {
        const i = Math.max(0, b.findIndex((l, k) => l !== a[k]));
        tally.disagreements.push(`${file} --list-${mode} (${tool}): ${a.length} images here, ${b.length} there; first difference at ${i + 1}: ${a[i]} vs ${b[i]}`);
      }
      tally.compared += b.length;
      if (theirs.fatal !== null) tally.beyondFatal += Math.max(0, a.length - b.length);
    }
  }
}

describeIf(haveReal, haveOracle ? NEEDS.realCudaLibs : 'needs cuobjdump: bash test/fixtures/fetch-cuda-libs.sh')('real CUDA libraries from Debian', () => {
  for (const [oracle, version, how] of [[ORACLE_12, '12.4', 'by kind, order and architecture'], [ORACLE_13, '13.1', 'named alike']] as const) {
    testIf(oracle === ORACLE_12 || have13, NEEDS_13)(`every image cuobjdump ${version} lists, in its order, ${how}`, () => {
      const tally: Tally = {compared: 0, beyondFatal: 0, disagreements: []};
      for (const file of REAL) compare(file, tally, [oracle]);
      expect(tally.disagreements).toEqual([]);
      // libcusparse 12.4 alone has 1059 SASS and 117 PTX images; 12.4 lists 4193 in all, 13.1 (which
      // stops at "Invalid ELF" earlier in cuBLAS and NCCL) 2584.
      expect(tally.compared).toBeGreaterThan(2000);
      console.log(`device code: ${tally.compared} image listings of ${REAL.length} Debian libraries agree with cuobjdump ${version}; ${tally.beyondFatal} past where cuobjdump stopped ("Invalid ELF") not compared`);
    }, 300_000);
  }

  test('libraries without device code have none, and a library with some says which', () => {
    expect(readDeviceCode(REAL[1]!).images).toEqual([]);
    const cusparse = readDeviceCode(REAL[0]!);
    expect(cusparse.problem).toBeUndefined();
    expect(new Set(cusparse.images.filter((i) => i.kind === 'sass').map((i) => i.arch))).toEqual(new Set([50, 52, 60, 61, 70, 75, 80, 86, 89, 90]));
    // PTX ISA 8.4 (CUDA 12.4), as `cuobjdump -ptx` prints in each `.version` line.
    expect(new Set(cusparse.images.filter((i) => i.kind === 'ptx').map((i) => `${i.arch}@${i.version}`))).toEqual(new Set(['80@8.4', '90@8.4']));
  });
});

testIf(haveLarge, 'optional: the large CUDA libraries are not fetched (CUDAENV_FETCH_LARGE=1 bash test/fixtures/fetch-cuda-libs.sh)')(
  'libcublasLt and PyTorch 2.6 libtorch_cuda agree with cuobjdump too', () => {
    const tally: Tally = {compared: 0, beyondFatal: 0, disagreements: []};
    for (const file of LARGE) compare(file, tally, ORACLES);
    expect(tally.disagreements).toEqual([]);
    console.log(`device code: ${tally.compared} image listings of ${LARGE.length} large libraries agree; ${tally.beyondFatal} past cuobjdump's stop not compared`);
  }, 600_000);

/** One object per -gencode set: SASS only, PTX only, both, arch- and family-specific, compressed, -rdc, a shared library. */
const SETS: Record<string, string[]> = {
  'sass-only': ['-gencode', 'arch=compute_75,code=sm_75', '-gencode', 'arch=compute_86,code=sm_86', '-Xfatbin', '-compress-mode=none'],
  'ptx-only': ['-gencode', 'arch=compute_80,code=compute_80', '-gencode', 'arch=compute_120f,code=compute_120f'],
  'both-a-f': ['-gencode', 'arch=compute_90a,code=[sm_90a,compute_90a]', '-gencode', 'arch=compute_100f,code=sm_100f',
    '-gencode', 'arch=compute_103a,code=sm_103a', '-gencode', 'arch=compute_120,code=[sm_120,compute_120]'],
  compressed: ['-Xfatbin', '-compress-all', '-gencode', 'arch=compute_89,code=[sm_89,compute_89]', '-gencode', 'arch=compute_90a,code=sm_90a'],
  rdc: ['-rdc=true', '-gencode', 'arch=compute_80,code=[sm_80,compute_80]', '-gencode', 'arch=compute_121a,code=sm_121a'],
};
const KERNEL = '__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\nextern "C" void launch(float *x) { k<<<1, 32>>>(x); }\n';

describeIf(haveNvcc && have13, !haveNvcc ? NEEDS.devToolkit('/usr/local/cuda') : NEEDS_13)('objects built here with nvcc', () => {
  let tmp: TempDir;
  let dir = '';
  const objects: Record<string, string> = {};
  afterAll(() => tmp?.cleanup());
  beforeAll(() => {
    tmp = makeTempDir('device-code-');
    dir = tmp.dir;
    writeFileSync(join(dir, 'k.cu'), KERNEL);
    for (const [name, flags] of Object.entries(SETS)) {
      const out = join(dir, `${name}.o`);
      const r = spawnSync(NVCC, ['-c', '-o', out, join(dir, 'k.cu'), ...flags], {encoding: 'utf8'});
      if (r.status !== 0) throw new Error(`nvcc ${flags.join(' ')} failed: ${r.stderr}`);
      objects[name] = out;
    }
    // A shared library: the device link adds a fat binary of its own, so there are two.
    const so = join(dir, 'libk.so');
    const r = spawnSync(NVCC, ['-shared', '-Xcompiler', '-fPIC', '-o', so, join(dir, 'k.cu'),
      '-gencode', 'arch=compute_86,code=sm_86', '-gencode', 'arch=compute_90,code=[sm_90,compute_90]'], {encoding: 'utf8'});
    if (r.status !== 0) throw new Error(`nvcc -shared failed: ${r.stderr}`);
    objects.shared = so;
    // Compilation units built with -G (or -lineinfo) name themselves in their entries (as Debian's MAGMA's do), the
    // others do not: cuobjdump names the first by their unit, the others by the file and a number.
    const units: string[] = [];
    for (const [unit, flags] of [['unit_b.cu', ['-G']], ['k.cu', []], ['dir.c.cu', ['-G']]] as const) {
      const id = unit.replace(/\W/g, '_');
      if (unit !== 'k.cu') writeFileSync(join(dir, unit), `__global__ void k_${id}(float *x) { x[0] = 1.0f; }\nextern "C" void launch_${id}(float *x) { k_${id}<<<1, 1>>>(x); }\n`);
      const out = join(dir, `${unit}.o`);
      // The unit's name is the source as nvcc was given it: relative, from the temp directory.
      const c = spawnSync(NVCC, ['-c', '-Xcompiler', '-fPIC', '-o', out, unit, ...flags, '-gencode', 'arch=compute_75,code=[sm_75,compute_75]'], {encoding: 'utf8', cwd: dir});
      if (c.status !== 0) throw new Error(`nvcc -c ${unit} failed: ${c.stderr}`);
      units.push(out);
    }
    objects.named = join(dir, 'libnamed.so.1');
    const l = spawnSync(NVCC, ['-shared', '-o', objects.named, ...units], {encoding: 'utf8'});
    if (l.status !== 0) throw new Error(`nvcc -shared ${units.join(' ')} failed: ${l.stderr}`);
  }, 600_000);

  test('each object lists as cuobjdump lists it', () => {
    const tally: Tally = {compared: 0, beyondFatal: 0, disagreements: []};
    for (const file of Object.values(objects)) compare(file, tally, ORACLES);
    expect(tally.disagreements).toEqual([]);
    expect(tally.beyondFatal).toBe(0);
    console.log(`device code: ${tally.compared} image listings of ${Object.keys(objects).length} nvcc-built objects agree with cuobjdump`);
  });

  test('the -gencode sets come out as asked: variants, PTX ISA, compression, relocatable code', () => {
    const summary = (file: string) => readDeviceCode(file).images.map((i: KernelImage) =>
      `${i.kind}:${i.arch}${i.variant}${i.kind === 'ptx' ? `@${i.version}` : ''}${i.compressed ? ':z' : ''}${i.relocatable ? ':rdc' : ''}`);
    expect(summary(objects['sass-only']!)).toEqual(['sass:75', 'sass:86']);
    expect(summary(objects['ptx-only']!)).toEqual(['ptx:80@9.0:z', 'ptx:120f@9.0:z']);
    expect(summary(objects['both-a-f']!)).toEqual(['sass:90a', 'ptx:90a@9.0:z', 'sass:100f', 'sass:103a', 'sass:120', 'ptx:120@9.0:z']);
    expect(summary(objects.compressed!)).toEqual(['sass:89:z', 'ptx:89@9.0:z', 'sass:90a:z']);
    expect(summary(objects.rdc!).every((s) => s.endsWith(':rdc'))).toBe(true);
    const shared = readDeviceCode(objects.shared!);
    expect(shared.fatbins).toBe(2);
    // The PTX ISA version in the entry header is the one in the PTX text (`cuobjdump -ptx`).
    const text = spawnSync(CUOBJDUMP_13, ['-ptx', objects['both-a-f']!], {encoding: 'utf8'}).stdout;
    expect([...text.matchAll(/^\.version (\S+)/gm)].map((m) => m[1])).toEqual(['9.0', '9.0']);
  });

  test('an image whose entry names its compilation unit is named by it, the others by the file and their number among their kind', () => {
    const images = readDeviceCode(objects.named!).images;
    expect(images.map((i) => `${i.kind}:${i.unit ?? '-'}`)).toEqual(['sass:-', 'sass:unit_b.cu', 'ptx:unit_b.cu', 'sass:-', 'ptx:-', 'sass:dir.c.cu', 'ptx:dir.c.cu']);
    expect([...mine(objects.named!, 'elf'), ...mine(objects.named!, 'ptx')]).toEqual([
      'libnamed.so.1.sm_75.cubin', 'unit_b.sm_75.cubin', 'libnamed.so.3.sm_75.cubin', 'dir.c.sm_75.cubin',
      'unit_b.sm_75.ptx', 'libnamed.so.2.sm_75.ptx', 'dir.c.sm_75.ptx',
    ]);
  });

  test('a damaged fat binary is a note on the file, never a crash or a hang', () => {
    const source = objects['both-a-f']!;
    const sectionOffset = Number.parseInt(/\.nv_fatbin\s+PROGBITS\s+[0-9a-f]+\s+([0-9a-f]+)/.exec(spawnSync('readelf', ['-SW', source], {encoding: 'utf8'}).stdout)![1]!, 16);
    const damage = (name: string, at: number, bytes: number[]) => {
      const file = join(dir, name);
      copyFileSync(source, file);
      const buf = readFileSync(file);
      Buffer.from(bytes).copy(buf, sectionOffset + at);
      writeFileSync(file, buf);
      return file;
    };
    // The container's size, then the first entry's payload size, made absurd; then junk for a magic.
    const huge = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 0];
    for (const [name, at, bytes, words] of [
      ['size.o', 8, huge, /past the end of \.nv_fatbin/],
      ['entry.o', 16 + 8, huge, /do not fit in its fat binary/],
      ['magic.o', 0, [1, 2, 3, 4], /no fat binary at offset 0 of \.nv_fatbin/],
      // Zeros where the container header was: skipped as padding, up to the first entry, which is no container.
      ['zeros.o', 0, new Array(16).fill(0), /no fat binary at offset 16 of \.nv_fatbin/],
    ] as const) {
      const code = readDeviceCode(damage(name, at, [...bytes]));
      expect(code.problem).toMatch(words);
    }
    // Cut off inside the section: the section header says more than the file holds.
    const cut = join(dir, 'cut.o');
    copyFileSync(source, cut);
    truncateSync(cut, sectionOffset + 100);
    expect(() => readDeviceCode(cut)).toThrow(/cut\.o: section \.nv_fatbin .* lies past the end of the file|section header table/);
    expect(statSync(cut).size).toBe(sectionOffset + 100);
  });
});

describe('files without device code', () => {
  test('a host-only library has none, and a file that is not ELF says so', () => {
    expect(readDeviceCode('/bin/sh').images).toEqual([]);
    expect(() => readDeviceCode(join(import.meta.dirname, 'cuobjdump-oracle.test.ts'))).toThrow(/not an ELF file/);
  });
});
