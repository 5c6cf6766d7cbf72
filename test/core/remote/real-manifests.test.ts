import {describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, readdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {cudnnBuildFor} from '../../../src/core/remote/cudnn.js';
import {installability} from '../../../src/core/remote/installable.js';
import {labelParts} from '../../../src/core/remote/labels.js';
import {parseManifest, type Manifest} from '../../../src/core/remote/manifest.js';
import {rewritePcText} from '../../../src/core/remote/pkgconfig.js';
import {machineKind, platformForRelease} from '../../../src/core/remote/platform.js';
import {machineSoftwareReason, profileComponents, selectComponents} from '../../../src/core/remote/profiles.js';
import {VENDORED_MANIFESTS, realManifestText, rewriteArtifact} from '../../helpers/real-mirror.js';
import {testIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';

/** NVIDIA's real manifests, read as they are (test/fixtures/redist-manifests). */
const real = (product: 'cuda' | 'cudnn', label: string): Manifest =>
  parseManifest(realManifestText(product, label), `redistrib_${label}.json`, label);

function filesIn(dir: string): Array<{product: 'cuda' | 'cudnn'; label: string; text: string}> {
  return (['cuda', 'cudnn'] as const).flatMap((product) => readdirSync(join(dir, product))
    .filter((f) => /^redistrib_.*\.json$/.test(f))
    .map((f) => ({product, label: f.slice('redistrib_'.length, -'.json'.length), text: readFileSync(join(dir, product, f), 'utf8')})));
}

function checkParsesAll(dir: string): void {
  const files = filesIn(dir);
  expect(files.length).toBeGreaterThan(0);
  for (const {product, label, text} of files) {
    const m = parseManifest(text, label, label);
    expect(m.label).toBe(label);
    expect(m.components.size).toBeGreaterThan(0);
    if (product === 'cuda') {
      const x86 = installability(m, {explicit: 'linux-x86_64'});
      expect({label, ...x86}).toEqual({label, installable: true, platform: 'linux-x86_64'});
      expect(profileComponents('minimal', m, 'linux-x86_64')).toEqual(expect.arrayContaining(['cuda_nvcc', 'cuda_cudart', 'cuda_cccl']));
    }
  }
}

describe('NVIDIA\'s real manifests', () => {
  test('every CUDA release 11.4.2-13.0.2 and every cuDNN 8.5-9.14 parses; CUDA releases are installable for x86_64; those without release_label take it from the file name', () => {
    checkParsesAll(VENDORED_MANIFESTS);
    const files = filesIn(VENDORED_MANIFESTS);
    expect(files.filter((f) => f.product === 'cuda').length).toBe(37);
    expect(files.filter((f) => f.product === 'cudnn').length).toBe(36);
    const noLabel = files.filter((f) => f.product === 'cuda' && !('release_label' in JSON.parse(f.text))).map((f) => f.label);
    expect(noLabel).toEqual(expect.arrayContaining(['11.4.2', '11.8.0', '12.0.1', '12.1.1']));
    expect(noLabel.every((l) => labelParts(l)![0]! <= 12)).toBe(true);
  });

  test('11.8.0 has no release_label: the label is the file name\'s; without a file name it is refused', () => {
    const text = realManifestText('cuda', '11.8.0');
    expect(JSON.parse(text).release_label).toBeUndefined();
    const m = parseManifest(text, 'redistrib_11.8.0.json', '11.8.0');
    expect(m).toMatchObject({label: '11.8.0', date: '2022-10-03'});
    expect(m.components.get('cuda_cudart')!.version).toBe('11.8.89');
    expect(() => parseManifest(text, 'x.json')).toThrow('x.json is not a valid redist manifest: release_label is missing and the file name gives no release');
  });

  test('driver and machine software is refused from --components with the reason, unless allowed', () => {
    const m = real('cuda', '12.4.1');
    for (const name of ['nvidia_driver', 'fabricmanager', 'imex', 'nvidia_fs', 'libnvidia_nscq']) {
      expect(() => selectComponents({manifest: m, platform: 'linux-x86_64', components: [name]})).toThrow(new RegExp(`^${name} is not part of a CUDA toolkit: `));
    }
    expect(selectComponents({manifest: m, platform: 'linux-x86_64', components: ['nvidia_driver'], allowDriverComponents: true})).toEqual(['nvidia_driver']);
    // cuda_compat exists only for linux-aarch64: the refusal says so
    expect(() => selectComponents({manifest: m, platform: 'linux-x86_64', components: ['cuda_compat']}))
      .toThrow('cuda_compat is not part of a CUDA toolkit: the CUDA forward-compatibility libcuda must match the installed driver, not a toolkit; it exists only for linux-aarch64');
    const m13 = real('cuda', '13.0.2');
    for (const name of ['mft', 'mft_oem', 'mft_autocomplete']) expect(machineSoftwareReason(name)).toMatch(/firmware tools/);
    expect(() => selectComponents({manifest: m13, platform: 'linux-x86_64', components: ['mft_autocomplete']}))
      .toThrow(expect.objectContaining({hint: expect.stringContaining('add --allow-driver-components')}) as never);
    expect(machineSoftwareReason('cuda_nvcc')).toBeUndefined();
    // full never takes them
    const full = profileComponents('full', m13, 'linux-x86_64');
    expect(full).toContain('libnvvm');
    for (const k of ['nvidia_driver', 'fabricmanager', 'imex', 'mft', 'mft_oem', 'nvidia_fs', 'libnvidia_nscq', 'nvlsm', 'collectx_bringup', 'libnvsdm']) expect(full).not.toContain(k);
  });

  test('a component only under a cuDNN variant lists the variants in the refusal', () => {
    const m = real('cudnn', '9.14.0');
    expect(() => selectComponents({manifest: m, platform: 'linux-x86_64', components: ['cudnn']}))
      .toThrow(expect.objectContaining({hint: 'It exists for: linux-x86_64 (cuda12, cuda13), linux-sbsa (cuda12, cuda13), windows-x86_64 (cuda12, cuda13), linux-aarch64 (cuda12, cuda13).'}) as never);
  });

  test('cuDNN: a build counts only for the CUDA major it is built for, as the manifest says it', () => {
    const perMajor = real('cudnn', '8.9.7.29');
    expect(perMajor.product).toBe('cudnn-v8-9-cuda-12');
    const c = perMajor.components.get('cudnn')!;
    expect(cudnnBuildFor(perMajor, c, 'linux-x86_64', 12)).toMatchObject({major: 12, style: 'per-major'});
    expect(cudnnBuildFor(perMajor, c, 'linux-x86_64', 11)).toEqual({why: 'built for CUDA 12'});
    expect(cudnnBuildFor(perMajor, c, 'linux-aarch64', 12)).toEqual({why: 'no linux-aarch64 build'});
    // where release_product and the archive name disagree, neither is believed
    const lying = parseManifest(realManifestText('cudnn', '8.9.7.29').replace('cudnn-v8-9-cuda-12', 'cudnn-v8-9-cuda-11'), 'x', '8.9.7.29');
    expect(cudnnBuildFor(lying, lying.components.get('cudnn')!, 'linux-x86_64', 11)).toEqual({why: 'its release_product and archive name disagree on the CUDA major (11 vs 12)'});
    const variants = real('cudnn', '8.9.7');
    const v = variants.components.get('cudnn')!;
    expect(cudnnBuildFor(variants, v, 'linux-x86_64', 11)).toMatchObject({major: 11, style: 'variant'});
    expect(cudnnBuildFor(variants, v, 'linux-x86_64', 13)).toEqual({why: 'built for CUDA 11, CUDA 12'});
  });

  test('platforms: CUDA 13 has no linux-aarch64; a Jetson Thor uses linux-sbsa, an older Jetson is refused with why', () => {
    const m124 = real('cuda', '12.4.1');
    const m13 = real('cuda', '13.0.2');
    expect(platformForRelease(m124, {kind: 'jetson'})).toEqual({platform: 'linux-aarch64', why: 'this machine is a Jetson (L4T)'});
    expect(platformForRelease(m13, {kind: 'jetson-thor'}).platform).toBe('linux-sbsa');
    expect(platformForRelease(m13, {kind: 'jetson-thor'}).why).toMatch(/Jetson Thor-class/);
    expect(platformForRelease(m124, {kind: 'sbsa'}).platform).toBe('linux-sbsa');
    expect(() => platformForRelease(m13, {kind: 'jetson'})).toThrow('CUDA 13.0.2 has no linux-aarch64 (Jetson) archives, and this machine is a Jetson before Thor');
    expect(platformForRelease(m13, {kind: 'jetson', explicit: 'linux-sbsa'})).toEqual({platform: 'linux-sbsa', why: 'chosen with --arch'});
    expect(installability(m13, {kind: 'jetson'})).toEqual({installable: false, why: 'it has no linux-aarch64 (Jetson) archives, and this machine is a Jetson before Thor'});
    expect(installability(m13, {explicit: 'linux-aarch64'})).toEqual({installable: false, why: 'it has no linux-aarch64 archives'});
    expect(() => platformForRelease(m13, {explicit: 'linux-aarch64'})).toThrow(expect.objectContaining({hint: 'It has linux-x86_64, linux-sbsa. From CUDA 13, Jetson Thor uses linux-sbsa. Choose another --arch or release (cudaenv ls-remote --arch linux-aarch64).'}) as never);
    expect(installability(real('cuda', '11.8.0'), {kind: 'jetson'})).toEqual({installable: true, platform: 'linux-aarch64'});
  });

  test('machine kinds: x86_64, SBSA server, Jetson (L4T R36, tegra234), Jetson Thor (R38, tegra264)', () => {
    expect(machineKind('x64', {})).toBe('x86_64');
    expect(machineKind('arm64', {})).toBe('sbsa');
    expect(machineKind('arm64', {tegraRelease: '# R36 (release), REVISION: 4.3, GCID: 1, BOARD: generic, EABI: aarch64\n', compatible: 'nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0nvidia,tegra234\0'})).toBe('jetson');
    expect(machineKind('arm64', {tegraRelease: '# R38 (release), REVISION: 2.0\n'})).toBe('jetson-thor');
    expect(machineKind('arm64', {compatible: 'nvidia,p3971-0080+p3834-0008\0nvidia,tegra264\0'})).toBe('jetson-thor');
    expect(() => machineKind('ia32', {})).toThrow(/has no CUDA redist archives/);
  });

  test('pkg-config: cudaroot becomes the installed path, targets/<arch>/ the flat prefix', () => {
    const pc = 'cudaroot=/usr/local/cuda-12.4\nlibdir=${cudaroot}/targets/x86_64-linux/lib\nincludedir=${cudaroot}/targets/x86_64-linux/include\n\nName: cudart\nLibs: -L${libdir} -lcudart\nCflags: -I${includedir}\n';
    expect(rewritePcText(pc, '/home/u/.cudaenv/versions/12.4.1')).toBe('cudaroot=/home/u/.cudaenv/versions/12.4.1\nlibdir=${cudaroot}/lib64\nincludedir=${cudaroot}/include\n\nName: cudart\nLibs: -L${libdir} -lcudart\nCflags: -I${includedir}\n');
  });

  testIf(spawnSync('pkg-config', ['--version']).status === 0, 'needs pkg-config (apt-get install pkg-config)')('pkg-config: an installed path with blanks, quotes and # comes out whole', () => {
    const t = makeTempDir('cudaenv-pc-');
    try {
      const root = join(t.dir, 'my "cuda" it\'s #1');
      const pcDir = join(t.dir, 'pc');
      mkdirSync(pcDir);
      writeFileSync(join(pcDir, 'cudart-12.4.pc'), rewritePcText('cudaroot=/usr/local/cuda-12.4\nlibdir=${cudaroot}/targets/x86_64-linux/lib\nincludedir=${cudaroot}/targets/x86_64-linux/include\n\nName: cudart\nDescription: CUDA Runtime Library\nVersion: 12.4\nLibs: -L${libdir} -lcudart\nCflags: -I${includedir}\n', root));
      const r = spawnSync('pkg-config', ['--cflags', '--libs', 'cudart-12.4'], {encoding: 'utf8', env: {...process.env, PKG_CONFIG_PATH: pcDir, PKG_CONFIG_LIBDIR: ''}});
      expect(r.stderr).toBe('');
      // pkg-config prints shell-quoted words: a shell's eval (as meson's and CMake's parsers) gives back the exact paths
      const words = spawnSync('sh', ['-c', 'eval "set -- $1"; printf "%s\\n" "$@"', 'sh', r.stdout], {encoding: 'utf8'}).stdout.trim().split('\n');
      expect(words).toEqual([`-I${root}/include`, `-L${root}/lib64`, '-lcudart']);
    } finally {
      t.cleanup();
    }
  });

  test('the stand-in mirror rewrites only sha256 and size, in place', () => {
    const text = realManifestText('cuda', '11.8.0');
    const rel = 'cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-11.8.89-archive.tar.xz';
    const out = rewriteArtifact(text, rel, 'f'.repeat(64), 1234);
    expect(out.length).toBe(text.length - '913876'.length + 4);
    const before = JSON.parse(text);
    const after = JSON.parse(out);
    expect(after.cuda_cudart['linux-x86_64']).toEqual({...before.cuda_cudart['linux-x86_64'], sha256: 'f'.repeat(64), size: '1234'});
    expect({...after, cuda_cudart: null}).toEqual({...before, cuda_cudart: null});
  });
});
