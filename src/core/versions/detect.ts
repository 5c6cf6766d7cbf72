import {createRequire} from 'node:module';
import {existsSync, readFileSync, readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {matchRelease, type FoundComponent, type ReleaseMatch, type ReleaseTable} from './releases.js';
import {isVersion} from './version.js';
import {isFile} from '../fs-kind.js';

/** How a toolkit's version was found: stated by the toolkit, or matched from its components' versions. */
export type DetectionSource = 'version.json' | 'version.txt' | 'components';

export interface Detection {
  version?: string;
  source?: DetectionSource;
  /** Why the directory is or is not a toolkit, for messages. */
  evidence: string[];
  /** For source 'components': the release the component versions match, and how well. */
  release?: ReleaseMatch;
}

const LIB_DIRS = ['lib64', 'lib', 'targets/x86_64-linux/lib', 'targets/sbsa-linux/lib', 'targets/aarch64-linux/lib'];

/**
 * Whether a directory looks like a CUDA toolkit: the runtime library, CUDA headers or
 * version.json, with bin/nvcc as supporting evidence only (a prefix such as /usr/local
 * may hold an nvcc wrapper script and nothing else of CUDA's).
 */
export function toolkitEvidence(dir: string): string[] {
  const found = rawEvidence(dir);
  return found.length === 1 && found[0] === 'bin/nvcc' && !nvvmPresent(dir) ? [] : found;
}

function nvvmPresent(dir: string): boolean {
  try {
    return statSync(join(dir, 'nvvm')).isDirectory();
  } catch {
    return false;
  }
}

function rawEvidence(dir: string): string[] {
  const found: string[] = [];
  if (isFile(join(dir, 'bin', 'nvcc'))) found.push('bin/nvcc');
  for (const sub of LIB_DIRS) {
    const lib = cudartIn(join(dir, sub));
    if (lib) {
      found.push(`${sub}/${lib}`);
      break;
    }
  }
  if (isFile(join(dir, 'include', 'cuda_runtime_api.h'))) found.push('include/cuda_runtime_api.h');
  if (isFile(join(dir, 'version.json'))) found.push('version.json');
  return found;
}

function cudartIn(dir: string): string | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  const libs = names.filter((n) => /^libcudart\.so(\.\d+)*$/.test(n)).sort((a, b) => b.length - a.length);
  return libs[0];
}

/**
 * A toolkit's release label. version.json (runfile and package installs) and version.txt (up
 * to 11.0) state it. Otherwise it is the NVIDIA release whose component versions are the ones
 * found: nvcc --version, libcudart.so.X.Y.Z and the other versioned libraries, the wheels'
 * dist-info of a pip-assembled tree. A component's own version (nvcc 13.0.88, cudart 13.0.96)
 * is never taken for the release (13.0.2) when the table knows the release. `releases`: the
 * table to match against (cudaenv's, with the releases a mirror's manifests added).
 */
export function detectToolkitVersion(dir: string, runNvcc = true, releases?: ReleaseTable): Detection {
  const evidence = toolkitEvidence(dir);
  const fromJson = readVersionJson(join(dir, 'version.json'));
  if (fromJson) return {version: fromJson, source: 'version.json', evidence};
  const fromTxt = readVersionTxt(join(dir, 'version.txt'));
  if (fromTxt) return {version: fromTxt, source: 'version.txt', evidence};
  const components = toolkitComponents(dir, runNvcc);
  const wheels = existsSync(join(dir, 'dist-info'));
  const withWheels = wheels && !evidence.includes('dist-info/') ? [...evidence, 'dist-info/'] : evidence;
  const release = matchRelease(components, releases);
  if (release && release.label) return {version: release.label, source: 'components', evidence: withWheels, release};
  return release ? {evidence: withWheels, release} : {evidence: withWheels};
}

/** cudart's and the other libraries' file names carry the component version as the manifests give it. */
const VERSIONED_LIBS: Record<string, string> = {
  libcudart: 'cuda_cudart', libnvrtc: 'cuda_nvrtc', libcublas: 'libcublas', libcublasLt: 'libcublas',
  libcufft: 'libcufft', libcurand: 'libcurand', libcusolver: 'libcusolver', libcusparse: 'libcusparse',
  libnvJitLink: 'libnvjitlink', libnpp: 'libnpp', libnvjpeg: 'libnvjpeg',
};

/** Every component version the toolkit shows, first source wins (the binary itself before metadata). */
export function toolkitComponents(dir: string, runNvcc = true): Record<string, FoundComponent> {
  const found: Record<string, FoundComponent> = {};
  const add = (name: string, version: string, from: string): void => {
    if (!(name in found)) found[name] = {version, from};
  };
  if (runNvcc && isFile(join(dir, 'bin', 'nvcc'))) {
    const v = nvccVersion(join(dir, 'bin', 'nvcc'));
    if (v) add('cuda_nvcc', v, 'nvcc --version');
  }
  for (const sub of LIB_DIRS) {
    let names: string[];
    try {
      names = readdirSync(join(dir, sub));
    } catch {
      continue;
    }
    for (const name of names.sort()) {
      const m = /^(lib\w+)\.so\.(\d+(?:\.\d+){2,3})$/.exec(name);
      const component = m ? VERSIONED_LIBS[m[1]!] : undefined;
      if (m && component) add(component, m[2]!, `${sub}/${name}`);
    }
  }
  for (const [name, version] of distInfoVersions(join(dir, 'dist-info'))) add(name, version, 'dist-info');
  return found;
}

/** nvidia_cuda_runtime_cu12 -> cuda_cudart, nvidia_cuda_nvcc -> cuda_nvcc, nvidia_nvtx -> cuda_nvtx, nvidia_nvvm -> libnvvm, nvidia_cublas -> libcublas. */
export function wheelComponent(wheel: string): string {
  const base = wheel.toLowerCase().replace(/-/g, '_').replace(/_cu\d+$/, '');
  if (base === 'nvidia_cuda_runtime') return 'cuda_cudart';
  if (base === 'nvidia_nvtx') return 'cuda_nvtx';
  if (base.startsWith('nvidia_cuda_')) return base.slice('nvidia_'.length);
  return base.replace(/^nvidia_/, 'lib');
}

function distInfoVersions(dir: string): Array<[string, string]> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: Array<[string, string]> = [];
  for (const name of names.sort()) {
    const m = /^(nvidia_[a-z0-9_]+)-(\d+(?:\.\d+){1,3})\.dist-info$/i.exec(name);
    if (m) out.push([wheelComponent(m[1]!), m[2]!]);
  }
  return out;
}

/** NVIDIA's version.json: {"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, ...}. */
function readVersionJson(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const data = JSON.parse(readFileSync(path, 'utf8')) as {cuda?: {version?: unknown}};
    const v = data.cuda?.version;
    return typeof v === 'string' && isVersion(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Toolkits up to 11.0 ship version.txt: "CUDA Version 11.0.228". */
function readVersionTxt(path: string): string | undefined {
  try {
    const m = /CUDA Version (\d+\.\d+\.\d+)/.exec(readFileSync(path, 'utf8'));
    return m && isVersion(m[1]!) ? m[1] : undefined;
  } catch {
    return undefined;
  }
}

/** "Cuda compilation tools, release 12.4, V12.4.131" -> 12.4.131. */
export function parseNvccVersion(output: string): string | undefined {
  const m = /release \d+\.\d+, V(\d+\.\d+\.\d+)/.exec(output);
  return m && isVersion(m[1]!) ? m[1] : undefined;
}

function nvccVersion(nvcc: string): string | undefined {
  try {
    const out = childProcess().execFileSync(nvcc, ['--version'], {encoding: 'utf8', timeout: 15000, stdio: ['ignore', 'pipe', 'ignore']});
    return parseNvccVersion(out);
  } catch {
    return undefined;
  }
}

/** Where toolkits usually live on a machine, for `cudaenv ls --system`. */
export function scanSystemToolkits(roots: string[] = ['/usr/local', '/opt'], extra: string[] = ['/usr/lib/cuda']): string[] {
  const found: string[] = [];
  for (const root of roots) {
    let names: string[];
    try {
      names = readdirSync(root);
    } catch {
      continue;
    }
    for (const name of names.sort()) {
      if (!/^cuda(-[\w.]+)?$/.test(name)) continue;
      const dir = join(root, name);
      if (toolkitEvidence(dir).length > 0) found.push(dir);
    }
  }
  for (const dir of extra) if (toolkitEvidence(dir).length > 0) found.push(dir);
  return found;
}

/**
 * node:child_process, loaded on first use: this module is reached from the shell's fast path
 * (a version that is not installed is answered with the toolkit this machine has), where loading
 * child_process at start-up costs 3 ms of the 24 ms budget of a cached `cudaenv use`.
 */
function childProcess(): typeof import('node:child_process') {
  return createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
}
