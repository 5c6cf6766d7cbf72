import {execFileSync} from 'node:child_process';
import {mkdirSync, mkdtempSync, readFileSync, writeFileSync} from 'node:fs';
import {basename, dirname, join} from 'node:path';
import {REPO_ROOT} from './cli.js';
import {buildArchive, NVCC_PROFILE, nvccScript, sha256, writeIndex, type ComponentSpec, type FileSpec} from './mirror.js';

/**
 * A mirror whose manifests are NVIDIA's real files, with only the `sha256` and `size` of the
 * entries it serves rewritten for stand-in archives it builds. The archives have NVIDIA's
 * inner layout: one `<name>-<platform>-<version>-archive/` folder with bin/ include/ lib/
 * (and pkg-config/) and LICENSE; `nvvm/` in cuda_nvcc up to 12.x and in libnvvm from 13.0.
 */

/** NVIDIA's manifests, every CUDA release 11.4.2-13.0.2 and cuDNN 8.5-9.14, kept in the repository (test/fixtures/redist-manifests). */
export const VENDORED_MANIFESTS = join(REPO_ROOT, 'test', 'fixtures', 'redist-manifests');

export function realManifestText(product: 'cuda' | 'cudnn', label: string): string {
  return readFileSync(join(VENDORED_MANIFESTS, product, `redistrib_${label}.json`), 'utf8');
}

export interface Served {
  component: string;
  platform?: string;
  /** cuDNN variant manifests: `cuda12`. */
  variant?: string;
  /** Extra or replacing files (relative to the archive's top folder). */
  files?: Record<string, FileSpec>;
}

interface RealArtifact {
  relative_path: string;
  sha256: string;
  size: string | number;
}

function entryOf(manifest: Record<string, unknown>, s: Served): {version: string; artifact: RealArtifact} {
  const c = manifest[s.component] as Record<string, unknown> | undefined;
  if (!c) throw new Error(`the real manifest has no ${s.component}`);
  const p = c[s.platform ?? 'linux-x86_64'] as Record<string, unknown> | undefined;
  const artifact = (s.variant ? p?.[s.variant] : p) as RealArtifact | undefined;
  if (!artifact?.relative_path) throw new Error(`the real manifest has no ${s.component} ${s.platform ?? 'linux-x86_64'} ${s.variant ?? ''}`);
  return {version: c.version as string, artifact};
}

/**
 * Rewrites, in the manifest's own text, the sha256 and size of the artifact object holding
 * `relativePath` - nothing else, not even the formatting - and checks that it is so.
 */
export function rewriteArtifact(text: string, relativePath: string, sha: string, size: number): string {
  const at = text.indexOf(`"relative_path": "${relativePath}"`);
  if (at < 0) throw new Error(`${relativePath} is not in the manifest text`);
  const start = text.lastIndexOf('{', at);
  const end = text.indexOf('}', at) + 1;
  const object = text.slice(start, end)
    .replace(/("sha256":\s*")[0-9a-fA-F]{64}"/, `$1${sha}"`)
    .replace(/("size":\s*")\d+"/, `$1${size}"`);
  return text.slice(0, start) + object + text.slice(end);
}

/** Every value of `a` and `b` equal except the sha256 and size of artifacts at the given paths. */
function checkOnlyRewritten(before: unknown, after: unknown, paths: Set<string>, where = '$'): void {
  if (typeof before !== 'object' || before === null) {
    if (before !== after) throw new Error(`${where} changed`);
    return;
  }
  const a = before as Record<string, unknown>;
  const b = after as Record<string, unknown>;
  if (Object.keys(a).join() !== Object.keys(b).join()) throw new Error(`${where}: keys changed`);
  const served = typeof a.relative_path === 'string' && paths.has(a.relative_path);
  for (const key of Object.keys(a)) {
    if (served && (key === 'sha256' || key === 'size')) continue;
    checkOnlyRewritten(a[key], b[key], paths, `${where}.${key}`);
  }
}

function major(version: string): number {
  return Number(version.split('.')[0]);
}

/** A gcc-built shared library with a soname, linked against `needs` (paths of other stand-ins). */
export function buildSo(work: string, soname: string, symbol: string, needs: string[] = []): Buffer {
  mkdirSync(work, {recursive: true});
  const dir = mkdtempSync(join(work, 'so-'));
  writeFileSync(join(dir, 'x.c'), `int ${symbol}(void) { return 0; }\n`);
  const out = join(dir, soname);
  // --no-as-needed: the stand-in calls nothing, yet must NEED what the real library needs.
  const links = ['-Wl,--no-as-needed', ...needs.flatMap((p) => [`-L${dirname(p)}`, `-l:${basename(p)}`])];
  execFileSync('gcc', ['-shared', '-fPIC', `-Wl,-soname,${soname}`, '-o', out, join(dir, 'x.c'), ...links]);
  return readFileSync(out);
}

/** A stand-in libcudart with NVIDIA's soname whose cudaRuntimeGetVersion reports the release (11.8 -> 11080). */
function buildCudartSo(work: string, soname: string, version: string): Buffer {
  mkdirSync(work, {recursive: true});
  const [maj, min] = version.split('.');
  writeFileSync(join(work, 'cudart.c'), `int cudaRuntimeGetVersion(int *v) { *v = ${Number(maj) * 1000 + Number(min) * 10}; return 0; }\n`);
  execFileSync('gcc', ['-shared', '-fPIC', `-Wl,-soname,${soname}`, '-o', join(work, soname), join(work, 'cudart.c')]);
  return readFileSync(join(work, soname));
}

/** The files of a component's stand-in archive, laid out as NVIDIA's are. */
export function standInFiles(work: string, component: string, version: string, release: string): Record<string, FileSpec> {
  const [maj, min] = release.split('.');
  const mm = `${maj}.${min}`;
  const license = {LICENSE: `${component} license (stand-in)\n`};
  // NVIDIA's .pc files: cudaroot is NVIDIA's own path; lib and include lie under targets/.
  const pc = (name: string, lib: string, description: string): FileSpec =>
    `cudaroot=/usr/local/cuda-${mm}\nlibdir=\${cudaroot}/targets/x86_64-linux/lib\nincludedir=\${cudaroot}/targets/x86_64-linux/include\n\nName: ${name}\nDescription: ${description}\nVersion: ${mm}\nLibs: -L\${libdir} -l${lib}\nCflags: -I\${includedir}\n`;
  const nvvm = {
    'nvvm/bin/cicc': {text: '#!/bin/sh\nexit 0\n', mode: 0o755},
    'nvvm/libdevice/libdevice.10.bc': 'BC\xc0\xde',
    'nvvm/include/nvvm.h': '/* nvvm */\n',
    [`nvvm/lib64/libnvvm.so.4.0.0`]: 'not a real libnvvm\n',
  };
  const libPair = (base: string, soMajor: string, full: string, symbol: string, needs: string[] = []): Record<string, FileSpec> => ({
    [`lib/${base}.so.${full}`]: {bytes: buildSo(join(work, base), `${base}.so.${soMajor}`, symbol, needs)},
    [`lib/${base}.so.${soMajor}`]: {symlink: `${base}.so.${full}`},
    [`lib/${base}.so`]: {symlink: `${base}.so.${soMajor}`},
  });
  switch (component) {
    case 'cuda_nvcc':
      return {
        ...license,
        'bin/nvcc': {text: nvccScript(mm, version), mode: 0o755},
        'bin/nvcc.profile': NVCC_PROFILE,
        'bin/ptxas': {text: '#!/bin/sh\nexit 0\n', mode: 0o755},
        // CUDA 13 moved the crt headers to cuda_crt and NVVM to libnvvm.
        ...(major(release) < 13 ? {'include/crt/host_config.h': '#define __HOST_CONFIG_H__\n', ...nvvm} : {}),
      };
    case 'libnvvm':
      return {...license, ...nvvm};
    case 'cuda_crt':
      return {...license, 'include/crt/host_config.h': '#define __HOST_CONFIG_H__\n'};
    case 'cuda_cudart': {
      // NVIDIA's sonames: libcudart.so.11.0 for CUDA 11, libcudart.so.12 / .13 after.
      const soname = maj === '11' ? 'libcudart.so.11.0' : `libcudart.so.${maj}`;
      return {
        ...license,
        [`lib/libcudart.so.${version}`]: {bytes: buildCudartSo(join(work, `cudart-${version}`), soname, version)},
        [`lib/${soname}`]: {symlink: `libcudart.so.${version}`},
        'lib/libcudart.so': {symlink: soname},
        'lib/stubs/libcuda.so': 'stub\n',
        'include/cuda_runtime.h': 'int cudaRuntimeGetVersion(int *v);\n',
        'include/cuda_runtime_api.h': `#define CUDART_VERSION ${Number(maj) * 1000 + Number(min) * 10}\n`,
        [`pkg-config/cudart-${mm}.pc`]: pc('cudart', 'cudart', 'CUDA Runtime Library'),
      };
    }
    case 'cuda_cccl':
    case 'cccl': // its name from CUDA 13.2
      return {...license, [major(release) >= 13 ? 'include/cccl/thrust/version.h' : 'include/thrust/version.h']: '#define THRUST_VERSION 200300\n'};
    case 'libcublas': {
      const lt = buildSo(join(work, 'cublasLt'), `libcublasLt.so.${maj}`, 'cublasLtCreate');
      mkdirSync(join(work, 'cublasLt-lib'), {recursive: true});
      const ltPath = join(work, 'cublasLt-lib', `libcublasLt.so.${maj}`);
      writeFileSync(ltPath, lt);
      return {
        ...license,
        [`lib/libcublasLt.so.${version}`]: {bytes: lt},
        [`lib/libcublasLt.so.${maj}`]: {symlink: `libcublasLt.so.${version}`},
        'lib/libcublasLt.so': {symlink: `libcublasLt.so.${maj}`},
        ...libPair('libcublas', maj!, version, 'cublasCreate_v2', [ltPath]),
        'include/cublas_v2.h': '/* cublas */\n',
        [`pkg-config/cublas-${mm}.pc`]: pc('cublas', 'cublas', 'CUDA BLAS Library'),
      };
    }
    case 'cuda_nvrtc':
      return {
        ...license,
        ...libPair('libnvrtc', maj!, version, 'nvrtcVersion'),
        [`lib/libnvrtc-builtins.so.${mm}`]: {bytes: buildSo(join(work, 'nvrtc-builtins'), `libnvrtc-builtins.so.${mm}`, 'getArchBuiltins')},
        'include/nvrtc.h': '/* nvrtc */\n',
        [`pkg-config/nvrtc-${mm}.pc`]: pc('nvrtc', 'nvrtc', 'A runtime compilation library for CUDA C++'),
      };
    default:
      return {...license, [`include/${component}.h`]: `/* ${component} ${version} */\n`};
  }
}

/**
 * cuDNN's stand-in: libcudnn.so.<major> NEEDs libcublasLt.so.<cuda major>, as the real one does,
 * so the real loader can tell whether the toolkit provides it.
 */
export function cudnnFiles(work: string, version: string, cudaMajor: number): Record<string, FileSpec> {
  const m = version.split('.')[0]!;
  const ltDir = join(work, `cudnn-needs-${cudaMajor}`);
  mkdirSync(ltDir, {recursive: true});
  const lt = join(ltDir, `libcublasLt.so.${cudaMajor}`);
  writeFileSync(lt, buildSo(join(work, 'lt-for-cudnn'), `libcublasLt.so.${cudaMajor}`, 'cublasLtCreate'));
  return {
    LICENSE: 'cudnn license (stand-in)\n',
    'include/cudnn.h': `#define CUDNN_VERSION_STRING "${version}"\n#define CUDNN_BUILT_FOR_CUDA ${cudaMajor}\n`,
    [`lib/libcudnn.so.${version}`]: {bytes: buildSo(join(work, `cudnn-${version}-${cudaMajor}`), `libcudnn.so.${m}`, 'cudnnCreate', [lt])},
    [`lib/libcudnn.so.${m}`]: {symlink: `libcudnn.so.${version}`},
    'lib/libcudnn.so': {symlink: `libcudnn.so.${m}`},
  };
}

export interface RealMirror {
  root: string;
  /** relative_path -> the stand-in's sha256 */
  served: Map<string, string>;
}

/**
 * Writes `root/redistrib_<label>.json` for each real manifest named, an index page listing them,
 * and a stand-in archive for each served entry (shared by manifests naming the same archive).
 */
export function writeRealMirror(root: string, product: 'cuda' | 'cudnn', releases: Array<{label: string; serve: Served[]; text?: string}>, work = `${root}.work`): RealMirror {
  mkdirSync(root, {recursive: true});
  const served = new Map<string, {sha: string; size: number}>();
  for (const {label, serve, text: given} of releases) {
    // `text`: a real manifest reshaped as a later release's (test/helpers/later-manifests.ts).
    const original = given ?? realManifestText(product, label);
    const manifest = JSON.parse(original) as Record<string, unknown>;
    let text = original;
    for (const s of serve) {
      const {version, artifact} = entryOf(manifest, s);
      const rel = artifact.relative_path;
      if (!served.has(rel)) {
        const top = basename(rel).replace(/\.tar\.xz$/, '');
        const files = {...(product === 'cudnn' ? cudnnFiles(work, version, Number(/_cuda(\d+)-archive/.exec(rel)![1])) : standInFiles(work, s.component, version, label)), ...s.files};
        // buildArchive names the top folder after the spec; give it NVIDIA's exact name.
        const spec: ComponentSpec = {name: s.component, version, platform: s.platform, files};
        const bytes = buildArchiveNamed(work, spec, top);
        mkdirSync(dirname(join(root, rel)), {recursive: true});
        writeFileSync(join(root, rel), bytes);
        served.set(rel, {sha: sha256(bytes), size: bytes.length});
      }
      const {sha, size} = served.get(rel)!;
      text = rewriteArtifact(text, rel, sha, size);
    }
    checkOnlyRewritten(manifest, JSON.parse(text), new Set(serve.map((s) => entryOf(manifest, s).artifact.relative_path)));
    writeFileSync(join(root, `redistrib_${label}.json`), text);
  }
  writeIndex(root, releases.map((r) => r.label));
  return {root, served: new Map([...served].map(([k, v]) => [k, v.sha]))};
}

/** buildArchive with the top folder named exactly as NVIDIA's (cuDNN's carry `_cuda12`). */
function buildArchiveNamed(work: string, spec: ComponentSpec, top: string): Buffer {
  const expected = `${spec.name}-${spec.platform ?? 'linux-x86_64'}-${spec.version}-archive`;
  if (top === expected) return buildArchive(work, spec);
  const variant = /_(cuda\d+)-archive$/.exec(top)?.[1];
  if (variant && top === `${spec.name}-${spec.platform ?? 'linux-x86_64'}-${spec.version}_${variant}-archive`) return buildArchive(work, {...spec, variant});
  throw new Error(`cannot name an archive's top folder ${top}`);
}
