import {lstatSync, realpathSync, statSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError, UsageError, isErrno} from '../errors.js';
import {quoteSh} from '../shell/quote.js';
import {detectToolkitVersion, type DetectionSource} from '../versions/detect.js';
import {isVersion} from '../versions/version.js';
import type {StorePaths} from './paths.js';
import {afterVersionsChanged} from './on-change.js';
import {describeVersion, ensureStoreDirs} from './registry.js';

export interface Registration {
  label: string;
  target: string;
  path: string;
  /** How the version was found; `--as` when the user named it. */
  source: DetectionSource | '--as';
  evidence: string[];
}

/** `cudaenv add`: registers an existing toolkit directory as `versions/<label>` -> the directory. */
export async function registerToolkit(paths: StorePaths, dir: string, as?: string): Promise<Registration> {
  let target: string;
  try {
    target = realpathSync(dir);
    if (!statSync(target).isDirectory()) throw new UsageError(`${dir} is not a directory`, 'Give the toolkit directory, for example /usr/local/cuda-12.2.');
  } catch (error) {
    if (error instanceof CudaenvError) throw error;
    throw new UsageError(`cannot use ${dir}: ${(error as Error).message}`, 'Give an existing toolkit directory, for example /usr/local/cuda-12.2.');
  }
  if (as !== undefined && !isVersion(as)) {
    throw new UsageError(`--as ${JSON.stringify(as)} is not a version label`, 'Use MAJOR.MINOR.PATCH, for example --as 12.4.1.');
  }
  const detection = detectToolkitVersion(target, as === undefined);
  if (detection.evidence.length === 0) {
    throw new CudaenvError(`${target} is not a CUDA toolkit: it has no bin/nvcc, no libcudart.so in lib64/ or lib/, no include/cuda_runtime_api.h, no version.json and no dist-info/`, {
      hint: 'Point cudaenv add at the toolkit root, the directory that holds bin/ and lib64/.',
      code: 'not-a-toolkit',
    });
  }
  const label = as ?? detection.version;
  if (!label) {
    throw new CudaenvError(`cannot tell which CUDA version ${target} holds (found ${detection.evidence.join(', ')}, but no version.json, version.txt, working bin/nvcc or versioned libcudart.so)`, {
      hint: `Name it yourself: cudaenv add ${quoteSh(dir)} --as 12.4.1`,
      code: 'version-unknown',
    });
  }
  if (target.startsWith(paths.versions + '/')) {
    throw new UsageError(`${target} is already inside the cudaenv store`, 'Nothing to register.');
  }
  ensureStoreDirs(paths);
  const link = join(paths.versions, label);
  const existing = describeVersion(paths, label);
  if (existing) {
    if (existing.kind === 'registered' && existing.target === target) {
      return {label, target, path: link, source: as ? '--as' : detection.source!, evidence: detection.evidence};
    }
    throw new CudaenvError(`CUDA ${label} is already in the store (${existing.kind === 'registered' ? `registered from ${existing.target}` : 'installed by cudaenv'})`, {
      hint: `Register this one under another label (cudaenv add ${quoteSh(dir)} --as ${label.replace(/\d+$/, (p) => String(Number(p) + 1))}) or remove the existing one with \`cudaenv uninstall ${label}\`.`,
      code: 'exists',
    });
  }
  try {
    symlinkSync(target, link);
  } catch (error) {
    if (isErrno(error, 'EEXIST')) throw new CudaenvError(`CUDA ${label} was added to the store by another process just now`, {hint: 'Run `cudaenv ls` to see it.'});
    throw new CudaenvError(`cannot write ${link}: ${(error as Error).message}`, {hint: 'Check the permissions of the cudaenv store (CUDAENV_DIR).'});
  }
  await afterVersionsChanged(paths);
  return {label, target, path: link, source: as ? '--as' : detection.source!, evidence: detection.evidence};
}

/** Whether a path exists without following links. */
export function lexists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
