import {describe, expect, test} from '@jest/globals';
import {readdirSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {parseManifest, type Manifest} from '../../../src/core/remote/manifest.js';
import {describeMissing, planComponents, planProfile, PROFILES} from '../../../src/core/remote/profiles.js';
import {laterManifestText, type Reshape} from '../../helpers/later-manifests.js';
import {VENDORED_MANIFESTS} from '../../helpers/real-mirror.js';

/**
 * Issue 36: a profile names parts by what they are. A part renamed (cuda_cccl -> cccl from 13.2)
 * is found under either name; a part the profile expects that a release lacks is named, unless
 * the release is known to predate it; components cudaenv does not know are said.
 */

const later = (r: Reshape): Manifest => parseManifest(laterManifestText(r), `redistrib_${r.label}.json`, r.label);

/** Every real CUDA manifest here (11.4.2-13.0.2). */
function realManifests(): Array<{label: string; manifest: Manifest}> {
  const dir = join(VENDORED_MANIFESTS, 'cuda');
  return readdirSync(dir).filter((f) => /^redistrib_\d+\.\d+\.\d+\.json$/.test(f)).map((f) => {
    const label = f.slice('redistrib_'.length, -'.json'.length);
    return {label, manifest: parseManifest(readFileSync(join(dir, f), 'utf8'), f, label)};
  });
}

const LINUX = ['linux-x86_64', 'linux-sbsa', 'linux-aarch64'];

describe('profiles against NVIDIA\'s real manifests', () => {
  test('no real release 11.4.2-13.0.2 lacks a part its profile expects, on any platform it has (older releases are known to predate cuda_crt, libnvvm, nvJitLink, the profiler API)', () => {
    const all = realManifests();
    expect(all.length).toBeGreaterThanOrEqual(37);
    let checked = 0;
    for (const {label, manifest} of all) {
      for (const platform of LINUX) {
        if (![...manifest.components.values()].some((c) => c.platforms.has(platform))) continue;
        for (const profile of PROFILES) {
          const plan = planProfile(profile, manifest, platform);
          expect({label, platform, profile, missing: plan.missing, unknown: plan.unknown}).toEqual({label, platform, profile, missing: [], unknown: []});
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(all.length * 3 - 1);
  });

  test('13.0.2 as it is: cuda_cccl, cuda_crt and libnvvm in minimal', () => {
    const m = parseManifest(readFileSync(join(VENDORED_MANIFESTS, 'cuda', 'redistrib_13.0.2.json'), 'utf8'), 'x', '13.0.2');
    expect(planProfile('minimal', m, 'linux-x86_64').names).toEqual(['cuda_cccl', 'cuda_crt', 'cuda_cudart', 'cuda_nvcc', 'libnvvm']);
  });
});

describe('a release shaped like 13.0.2 with cccl in place of cuda_cccl and a component cudaenv does not know', () => {
  const m = later({label: '13.4.1', extra: ['cuda_tileiras']});

  test('the reshaped manifest is 13.0.2 but for the rename and the extra component', () => {
    expect(m.components.has('cuda_cccl')).toBe(false);
    expect(m.components.get('cccl')!.platforms.get('linux-x86_64')).toMatchObject({relativePath: 'cccl/linux-x86_64/cccl-linux-x86_64-13.0.85-archive.tar.xz'});
    expect(m.components.get('cuda_tileiras')!.platforms.get('linux-sbsa')).toMatchObject({relativePath: expect.stringMatching(/^cuda_tileiras\/linux-sbsa\/cuda_tileiras-linux-sbsa-/)});
  });

  test('minimal and devel find CCCL under its new name; the unknown component is named, not installed', () => {
    const minimal = planProfile('minimal', m, 'linux-x86_64');
    expect(minimal.names).toEqual(['cccl', 'cuda_crt', 'cuda_cudart', 'cuda_nvcc', 'libnvvm']);
    expect(minimal.missing).toEqual([]);
    expect(minimal.unknown).toEqual(['cuda_tileiras']);
    const devel = planComponents({manifest: m, platform: 'linux-sbsa'});
    expect(devel.names).toContain('cccl');
    expect(devel.names).not.toContain('cuda_tileiras');
    expect(devel.unknown).toEqual(['cuda_tileiras']);
  });

  test('full installs the unknown component too, and names nothing', () => {
    const full = planProfile('full', m, 'linux-x86_64');
    expect(full.names).toEqual(expect.arrayContaining(['cccl', 'cuda_tileiras', 'cuda_crt']));
    expect(full.names).not.toContain('nvidia_driver');
    expect(full.unknown).toEqual([]);
  });

  test('--components finds a renamed part under either name, and says so', () => {
    const asOld = planComponents({manifest: m, platform: 'linux-x86_64', components: ['cuda_nvcc', 'cuda_cccl']});
    expect(asOld.names).toEqual(['cccl', 'cuda_nvcc']);
    expect(asOld.notes).toEqual(['--components cuda_cccl: CUDA 13.4.1 has it as cccl, which is installed']);
    expect(asOld.unknown).toEqual([]); // --components alone is exact: nothing else is suggested
    const m124 = parseManifest(readFileSync(join(VENDORED_MANIFESTS, 'cuda', 'redistrib_12.4.1.json'), 'utf8'), 'x', '12.4.1');
    expect(planComponents({manifest: m124, platform: 'linux-x86_64', components: ['cccl']}).names).toEqual(['cuda_cccl']);
    expect(planComponents({manifest: m, platform: 'linux-x86_64', components: ['cuda_tileiras'], profile: 'minimal'})).toMatchObject({unknown: []});
    expect(() => planComponents({manifest: m, platform: 'linux-x86_64', components: ['cuda_nope']})).toThrow(/CUDA 13.4.1 has no component "cuda_nope"/);
  });
});

describe('a part a profile expects that a release lacks is named', () => {
  test('a release without CCCL under either name: named with both names, what it is, and the unknown component that may be it', () => {
    const m = later({label: '13.5.0', cccl: 'none', extra: ['cuda_cxx_core']});
    const plan = planProfile('minimal', m, 'linux-x86_64');
    expect(plan.names).toEqual(['cuda_crt', 'cuda_cudart', 'cuda_nvcc', 'libnvvm']);
    expect(plan.missing).toEqual([{part: 'cccl', what: expect.stringContaining('Thrust, CUB, libcu++'), names: ['cccl', 'cuda_cccl']}]);
    const line = describeMissing('13.5.0', 'linux-x86_64', plan);
    expect(line).toMatch(/^CUDA 13\.5\.0 has no archive for linux-x86_64 of the CCCL headers .* \(looked for as cccl or cuda_cccl\): installed without it, so code that needs it will not build; CUDA 13\.5\.0 has components cudaenv does not know \(cuda_cxx_core\): if one of them is the part under a new name, add it with --components NAME$/);
  });

  test('a CUDA 13 release without libnvvm is named; a CUDA 12 one without cuda_crt or libnvvm is not (known to predate them)', () => {
    const m = later({label: '13.4.0', drop: ['libnvvm']});
    expect(planProfile('minimal', m, 'linux-sbsa').missing.map((x) => x.part)).toEqual(['nvvm']);
    expect(describeMissing('13.4.0', 'linux-sbsa', planProfile('minimal', m, 'linux-sbsa'))).toMatch(/NVVM.*\(looked for as libnvvm\): installed without it, .*; install it from elsewhere, or choose another release \(`cudaenv ls-remote`\)$/);
    const m124 = parseManifest(readFileSync(join(VENDORED_MANIFESTS, 'cuda', 'redistrib_12.4.1.json'), 'utf8'), 'x', '12.4.1');
    expect(planProfile('devel', m124, 'linux-x86_64').missing).toEqual([]);
  });

  test('a devel part missing on one platform only is named for that platform', () => {
    const text = laterManifestText({label: '13.4.1'});
    const data = JSON.parse(text) as Record<string, Record<string, unknown>>;
    delete data.libcublas!['linux-sbsa'];
    const m = parseManifest(JSON.stringify(data), 'x', '13.4.1');
    expect(planProfile('devel', m, 'linux-x86_64').missing).toEqual([]);
    expect(planProfile('devel', m, 'linux-sbsa').missing).toEqual([{part: 'cublas', what: 'cuBLAS', names: ['libcublas']}]);
    expect(planProfile('minimal', m, 'linux-sbsa').missing).toEqual([]);
  });
});
