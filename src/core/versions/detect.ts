import {execFileSync} from 'node:child_process';
import {existsSync, readFileSync, readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {isVersion} from './version.js';

/** How a toolkit's version was found, in the order `cudaenv add` tries them. */
export type DetectionSource = 'version.json' | 'version.txt' | 'nvcc --version' | 'libcudart file name' | 'dist-info';

export interface Detection {
  version?: string;
  source?: DetectionSource;
  /** Why the directory is or is not a toolkit, for messages. */
  evidence: string[];
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

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
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

export function detectToolkitVersion(dir: string, runNvcc = true): Detection {
  const evidence = toolkitEvidence(dir);
  const fromJson = readVersionJson(join(dir, 'version.json'));
  if (fromJson) return {version: fromJson, source: 'version.json', evidence};
  const fromTxt = readVersionTxt(join(dir, 'version.txt'));
  if (fromTxt) return {version: fromTxt, source: 'version.txt', evidence};
  if (runNvcc && isFile(join(dir, 'bin', 'nvcc'))) {
    const fromNvcc = nvccVersion(join(dir, 'bin', 'nvcc'));
    if (fromNvcc) return {version: fromNvcc, source: 'nvcc --version', evidence};
  }
  for (const sub of LIB_DIRS) {
    const lib = cudartIn(join(dir, sub));
    const m = lib ? /^libcudart\.so\.(\d+\.\d+\.\d+)$/.exec(lib) : null;
    if (m && isVersion(m[1]!)) return {version: m[1], source: 'libcudart file name', evidence};
  }
  // A toolkit assembled from pip wheels keeps their metadata: dist-info/nvidia_cuda_runtime[_cuXX]-X.Y.Z.dist-info.
  const fromWheel = distInfoVersion(join(dir, 'dist-info'));
  if (fromWheel) return {version: fromWheel, source: 'dist-info', evidence: [...evidence, 'dist-info/']};
  return {evidence};
}

function distInfoVersion(dir: string): string | undefined {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return undefined;
  }
  for (const name of names) {
    const m = /^nvidia_cuda_runtime(?:_cu\d+)?-(\d+\.\d+\.\d+)\.dist-info$/.exec(name);
    if (m && isVersion(m[1]!)) return m[1];
  }
  return undefined;
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
    const out = execFileSync(nvcc, ['--version'], {encoding: 'utf8', timeout: 15000, stdio: ['ignore', 'pipe', 'ignore']});
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
