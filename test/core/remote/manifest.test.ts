import {describe, expect, test} from '@jest/globals';
import {mkdirSync, mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {parseIndexPage} from '../../../src/core/remote/index-page.js';
import {compareLabels, matchesPrefix, newestMatching} from '../../../src/core/remote/labels.js';
import {artifactFor, parseManifest} from '../../../src/core/remote/manifest.js';
import {checkRelativePath, mirrorLocation, parseMirror} from '../../../src/core/remote/mirror.js';
import {machinePlatform, parsePlatform} from '../../../src/core/remote/platform.js';
import {parseComponentList, profileComponents, selectComponents} from '../../../src/core/remote/profiles.js';

// An excerpt of NVIDIA's redistrib_12.4.1.json (values as published).
const REAL_1241 = JSON.stringify({
  release_date: '2024-04-03', release_label: '12.4.1', release_product: 'cuda',
  cuda_cudart: {
    name: 'CUDA Runtime (cudart)', license: 'CUDA Toolkit', license_path: 'cuda_cudart/LICENSE.txt', version: '12.4.127',
    'linux-x86_64': {relative_path: 'cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-12.4.127-archive.tar.xz', sha256: '0483bff9a36e7a44465db3cd42874f6f70f019297dcf803fbefcbf58d7448c8f', md5: '5c452d73cb03a42c1711f8655fa2fb8a', size: '1099680'},
    'windows-x86_64': {relative_path: 'cuda_cudart/windows-x86_64/cuda_cudart-windows-x86_64-12.4.127-archive.zip', sha256: '0483bff9a36e7a44465db3cd42874f6f70f019297dcf803fbefcbf58d7448c8f', md5: '5c452d73cb03a42c1711f8655fa2fb8a', size: '3000'},
  },
  cuda_nvcc: {
    name: 'CUDA NVCC', license: 'CUDA Toolkit', version: '12.4.131',
    'linux-x86_64': {relative_path: 'cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.4.131-archive.tar.xz', sha256: '7ffba1ada0e4b8c17e451ac7a60d386aa2642ecd08d71202a0b100c98bd74681', md5: '66486841dab183168d79684c74df1928', size: '51184484'},
  },
  nvidia_driver: {name: 'NVIDIA Linux Driver', license: 'NVIDIA Driver', version: '550.54.15',
    'linux-x86_64': {relative_path: 'nvidia_driver/linux-x86_64/nvidia_driver-linux-x86_64-550.54.15-archive.tar.xz', sha256: 'a'.repeat(64), md5: 'b'.repeat(32), size: '1'}},
});

const sha = 'c'.repeat(64);
const art = (rel: string) => ({relative_path: rel, sha256: sha, md5: 'd'.repeat(32), size: '10'});

describe('manifest', () => {
  test('parses NVIDIA\'s format: release keys, components, size as a string', () => {
    const m = parseManifest(REAL_1241, 'redistrib_12.4.1.json');
    expect(m.label).toBe('12.4.1');
    expect(m.date).toBe('2024-04-03');
    expect([...m.components.keys()].sort()).toEqual(['cuda_cudart', 'cuda_nvcc', 'nvidia_driver']);
    const nvcc = artifactFor(m.components.get('cuda_nvcc')!, 'linux-x86_64')!;
    expect(nvcc).toEqual({relativePath: 'cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.4.131-archive.tar.xz', sha256: '7ffba1ada0e4b8c17e451ac7a60d386aa2642ecd08d71202a0b100c98bd74681', size: 51184484});
    expect(m.components.get('cuda_nvcc')!.version).toBe('12.4.131');
    expect(artifactFor(m.components.get('cuda_nvcc')!, 'linux-sbsa')).toBeUndefined();
  });

  test('accepts the cuda_variant nesting of cuDNN manifests', () => {
    const m = parseManifest(JSON.stringify({
      release_label: '9.1.0', release_product: 'cudnn',
      cudnn: {name: 'NVIDIA CUDA Deep Neural Network library', version: '9.1.0.70', cuda_variant: ['11', '12'],
        'linux-x86_64': {cuda11: art('cudnn/linux-x86_64/cudnn-linux-x86_64-9.1.0.70_cuda11-archive.tar.xz'), cuda12: art('cudnn/linux-x86_64/cudnn-linux-x86_64-9.1.0.70_cuda12-archive.tar.xz')}},
    }), 'x');
    const c = m.components.get('cudnn')!;
    expect(artifactFor(c, 'linux-x86_64', 'cuda12')!.relativePath).toContain('_cuda12-archive');
    expect(artifactFor(c, 'linux-x86_64', 'cuda13')).toBeUndefined();
    expect(artifactFor(c, 'linux-x86_64')).toBeUndefined();
  });

  test.each([
    ['../../etc/passwd', /climbs/],
    ['cuda_nvcc/../../x.tar.xz', /climbs/],
    ['/etc/passwd', /absolute/],
    ['https://evil.example/x.tar.xz', /absolute/],
    ['a//b.tar.xz', /empty/],
    ['a/b?x=1', /characters/],
  ])('refuses the relative_path %s', (rel, why) => {
    const text = JSON.stringify({release_label: '12.4.1', c: {version: '1', 'linux-x86_64': art(rel)}});
    expect(() => parseManifest(text, 'm')).toThrow(why);
  });

  test('names the file and the problem for broken manifests', () => {
    expect(() => parseManifest('{nope', 'https://m/redistrib_1.json')).toThrow(/https:\/\/m\/redistrib_1.json is not a valid redist manifest/);
    expect(() => parseManifest(JSON.stringify({release_label: '12.4.1', c: {'linux-x86_64': {relative_path: 'a/b', sha256: 'zz', size: '1'}}}), 'm')).toThrow(/sha256/);
    expect(() => parseManifest(JSON.stringify({release_label: '12.4.1', c: {'linux-x86_64': {relative_path: 'a/b', sha256: sha, size: '-1'}}}), 'm')).toThrow(/size/);
    expect(() => parseManifest(JSON.stringify({release_label: 'evil; rm'}), 'm')).toThrow(/release_label/);
    // Component names become directories of the staging tree: "." and ".." would name others.
    for (const name of ['..', '.', '.hidden', 'a/b']) {
      expect(() => parseManifest(JSON.stringify({release_label: '12.4.1', [name]: {version: '1', 'linux-x86_64': art('a/b.tar.xz')}}), 'm')).toThrow(`component name ${JSON.stringify(name)}`);
    }
  });

  test('an HTML page in its place (a proxy\'s error, a network login) is named as one, with its own words, not as a JSON error', () => {
    // Squid's error page, shortened: title, style, markup and entities.
    const squid = '<!DOCTYPE html>\n<html><head><title>ERROR: The requested URL could not be retrieved</title><style>body{font:x}</style></head>' +
      '<body><h1>ERROR</h1><p>Access control configuration prevents your request &amp; this one.</p><script>var x = 1;</script></body></html>';
    let error: unknown;
    try {
      parseManifest(squid, 'http://m/redistrib_12.4.1.json', '12.4.1');
    } catch (e) {
      error = e;
    }
    expect((error as Error).message).toBe('http://m/redistrib_12.4.1.json is not a redist manifest but an HTML page ("ERROR: The requested URL could not be retrieved: ERROR Access control configuration prevents your re…")');
    expect((error as {hint: string}).hint).toMatch(/^A proxy, a network login page or a web site answered instead of the mirror: check --mirror/);
    expect(() => parseManifest(`  <html><body>${'word '.repeat(60)}</body></html>`, 'm')).toThrow(/an HTML page \("(word ){19}word…"\)$/);
    expect(() => parseManifest('<html></html>', 'm')).toThrow(/^m is not a redist manifest but an HTML page$/);
  });
});

describe('index page and labels', () => {
  test('reads NVIDIA\'s HTML listing, oldest first, without duplicates', () => {
    const html = `<pre><a href="../">../</a>
<a href="redistrib_12.4.1.json">redistrib_12.4.1.json</a> 03-Apr-2024
<a href="redistrib_11.8.0.json">redistrib_11.8.0.json</a>
<a href="redistrib_12.10.0.json">redistrib_12.10.0.json</a>
<a href="redistrib_12.4.0.json">redistrib_12.4.0.json</a> <a href="redistrib_12.4.0.json">again</a>
<a href="cuda_nvcc/">cuda_nvcc/</a></pre>`;
    expect(parseIndexPage(html)).toEqual(['11.8.0', '12.4.0', '12.4.1', '12.10.0']);
  });

  test('prefixes match whole parts', () => {
    expect(matchesPrefix('12.4.1', '12.4')).toBe(true);
    expect(matchesPrefix('12.40.0', '12.4')).toBe(false);
    expect(newestMatching(['12.4.0', '12.4.1', '12.6.3', '13.0.0'], '12')).toBe('12.6.3');
    expect(newestMatching(['12.4.0', '12.4.1'], 'latest')).toBe('12.4.1');
    expect(compareLabels('8.9.7.29', '9.0.0')).toBeLessThan(0);
  });
});

describe('mirrors', () => {
  test('http, file:// and plain directories', () => {
    expect(parseMirror('https://developer.download.nvidia.com/compute/cuda/redist').base).toBe('https://developer.download.nvidia.com/compute/cuda/redist/');
    const f = parseMirror('file:///srv/nvidia%20redist/');
    expect(f.kind === 'file' && f.dir).toBe('/srv/nvidia redist');
    const d = parseMirror('/srv/redist');
    expect(mirrorLocation(d, 'a/b.tar.xz')).toBe('/srv/redist/a/b.tar.xz');
    expect(mirrorLocation(parseMirror('http://127.0.0.1:9/r/'), 'a b/c.json')).toBe('http://127.0.0.1:9/r/a%20b/c.json');
    expect(() => parseMirror('ftp://x/')).toThrow(/does not download from/);
    // A URL written without its scheme is no directory: said, with the URL it most likely meant.
    for (const typo of ['mirror.example.com/cuda/redist', 'developer.download.nvidia.com/compute/cuda/redist/', 'localhost:8000/redist', '10.0.0.5:8080']) {
      let error: unknown;
      try {
        parseMirror(typo);
      } catch (e) {
        error = e;
      }
      expect(String(error)).toContain(`--mirror "${typo}" has no http:// or https:// and is no directory`);
      expect((error as {hint?: string}).hint).toContain(`Did you mean https://${typo}?`);
    }
    // An existing directory of such a name is a directory like any other.
    const tmp = mkdtempSync(join(tmpdir(), 'cudaenv-mirror-'));
    try {
      mkdirSync(join(tmp, 'mirror.example.com'));
      expect(parseMirror(join(tmp, 'mirror.example.com')).kind).toBe('file');
    } finally {
      rmSync(tmp, {recursive: true, force: true});
    }
    expect(() => checkRelativePath('a/../b', 'x')).toThrow(/climbs/);
  });
});

describe('platforms and profiles', () => {
  test('maps architectures', () => {
    expect(parsePlatform('x86_64')).toBe('linux-x86_64');
    expect(parsePlatform('sbsa')).toBe('linux-sbsa');
    expect(parsePlatform('linux-aarch64')).toBe('linux-aarch64');
    expect(() => parsePlatform('ppc64le')).toThrow(/not an architecture/);
    expect(machinePlatform('x64')).toBe('linux-x86_64');
    expect(machinePlatform('arm64', () => false)).toBe('linux-sbsa');
    expect(machinePlatform('arm64', () => true)).toBe('linux-aarch64');
  });

  const manifestOf = (label: string, names: string[]) => parseManifest(JSON.stringify(Object.fromEntries([
    ['release_label', label], ...names.map((n) => [n, {version: '1', 'linux-x86_64': art(`${n}/linux-x86_64/${n}.tar.xz`)}]),
  ])), 'm');
  const all13 = ['cuda_nvcc', 'cuda_cudart', 'cuda_cccl', 'cuda_crt', 'libnvvm', 'libcublas', 'cuda_nvrtc', 'libnvjitlink', 'cuda_cupti', 'cuda_nvtx', 'cuda_nvml_dev', 'cuda_profiler_api', 'nsight_compute', 'nvidia_driver', 'fabricmanager', 'imex', 'libnvidia_nscq', 'nvidia_fs'];

  test('minimal includes cuda_crt and libnvvm for CUDA 13 only', () => {
    expect(profileComponents('minimal', manifestOf('13.0.0', all13), 'linux-x86_64').sort()).toEqual(['cuda_cccl', 'cuda_crt', 'cuda_cudart', 'cuda_nvcc', 'libnvvm']);
    expect(profileComponents('minimal', manifestOf('12.4.1', all13.filter((n) => n !== 'cuda_crt' && n !== 'libnvvm')), 'linux-x86_64').sort()).toEqual(['cuda_cccl', 'cuda_cudart', 'cuda_nvcc']);
  });

  test('devel adds libraries; full takes all but drivers and fabric managers', () => {
    const m = manifestOf('13.0.0', all13);
    expect(profileComponents('devel', m, 'linux-x86_64')).toEqual(expect.arrayContaining(['libcublas', 'cuda_nvrtc', 'libnvjitlink', 'cuda_cupti', 'cuda_nvtx', 'cuda_nvml_dev', 'cuda_profiler_api']));
    expect(profileComponents('devel', m, 'linux-x86_64')).not.toContain('nsight_compute');
    const full = profileComponents('full', m, 'linux-x86_64');
    expect(full).toContain('nsight_compute');
    for (const machine of ['nvidia_driver', 'fabricmanager', 'imex', 'libnvidia_nscq', 'nvidia_fs']) expect(full).not.toContain(machine);
  });

  test('--components alone is exact, unknown names are usage errors', () => {
    const m = manifestOf('12.4.1', ['cuda_nvcc', 'cuda_cudart', 'libcublas']);
    expect(selectComponents({manifest: m, platform: 'linux-x86_64', components: ['libcublas']})).toEqual(['libcublas']);
    expect(selectComponents({manifest: m, platform: 'linux-x86_64', profile: 'minimal', components: ['libcublas']})).toEqual(['cuda_cudart', 'cuda_nvcc', 'libcublas']);
    expect(() => selectComponents({manifest: m, platform: 'linux-x86_64', components: ['cuda_nope']})).toThrow(/has no component "cuda_nope"/);
    expect(() => selectComponents({manifest: m, platform: 'linux-sbsa', components: ['libcublas']})).toThrow(/no archive for linux-sbsa/);
    expect(() => parseComponentList('a,$(x)')).toThrow(/not a component name/);
  });
});

describe('a manifest\'s free text is escaped where it is parsed (issue 46)', () => {
  const hostile = JSON.stringify({
    release_label: '12.4.1', release_date: '2024\u001b[2J', release_product: 'cuda\u009b31m',
    cuda_cudart: {
      name: 'CUDA \u001b]0;pwned\u0007Runtime', license: 'x\r\nforged line', version: '12.4.127\u001b[31m\u202e',
      'linux-x86_64': art('cuda_cudart/linux-x86_64/a.tar.xz'),
    },
  });

  test('C0, DEL, C1 and bidi controls in name, version, license, date and product become visible escapes', () => {
    const m = parseManifest(hostile, 'x.json');
    const c = m.components.get('cuda_cudart')!;
    expect(c.version).toBe('12.4.127\\x1b[31m\\u{202e}');
    expect(c.name).toBe('CUDA \\x1b]0;pwned\\x07Runtime');
    expect(c.license).toBe('x\\r\\nforged line');
    expect(m.date).toBe('2024\\x1b[2J');
    expect(m.product).toBe('cuda\\x9b31m');
    // eslint-disable-next-line no-control-regex
    expect(JSON.stringify([c.version, c.name, c.license, m.date, m.product])).not.toMatch(/[\x00-\x1f\x7f-\x9f\u202e]/);
  });

  test('real free text is unchanged', () => {
    const c = parseManifest(REAL_1241, 'x.json').components.get('cuda_cudart')!;
    expect([c.name, c.version, c.license]).toEqual(['CUDA Runtime (cudart)', '12.4.127', 'CUDA Toolkit']);
  });

  test('a relative_path with a C1 control is refused like one with a C0 control', () => {
    expect(() => checkRelativePath('a/\u009b31m.tar.xz', 'x')).toThrow(/holds characters a redist path never has/);
  });
});
