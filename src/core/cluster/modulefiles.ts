import {readFileSync, readdirSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError} from '../errors.js';
import {quoteLua} from '../shell/quote.js';
import {toolkitLibDir, type LdLibraryPathPolicy} from '../shell/toolkit-env.js';
import {atomicWriteFile} from '../store/atomic-write.js';
import type {StorePaths} from '../store/paths.js';
import {listVersions} from '../store/registry.js';
import {parseVersion} from '../versions/version.js';

/** First line of every file cudaenv writes: only such files are ever replaced or removed. */
export const MODULEFILE_MARKER = '-- Written by cudaenv (`cudaenv modulefiles`); edits are overwritten.';

export interface ModulefileInput {
  label: string;
  /** The version directory, exactly as `cudaenv exec`/`use` put it in CUDA_HOME. */
  versionDir: string;
  policy: LdLibraryPathPolicy;
}

/**
 * One Lmod modulefile: the same PATH, LD_LIBRARY_PATH (per the policy), CUDA_HOME and
 * CUDA_PATH as `toolkitEnvironment` gives a shell. `family("cuda")` makes Lmod swap one cuda
 * module for another instead of stacking them. Every value is a Lua string literal.
 */
export function renderModulefile(input: ModulefileInput): string {
  const {label, versionDir} = input;
  const lines = [
    MODULEFILE_MARKER,
    `whatis(${quoteLua(`Name: CUDA Toolkit`)})`,
    `whatis(${quoteLua(`Version: ${label}`)})`,
    `whatis(${quoteLua(`Description: NVIDIA CUDA Toolkit ${label} (${versionDir})`)})`,
    `help(${quoteLua(`CUDA Toolkit ${label} from the cudaenv store: ${versionDir}`)})`,
    `family("cuda")`,
    `prepend_path("PATH", ${quoteLua(join(versionDir, 'bin'))})`,
  ];
  if (input.policy === 'prepend') lines.push(`prepend_path("LD_LIBRARY_PATH", ${quoteLua(toolkitLibDir(versionDir))})`);
  lines.push(`setenv("CUDA_HOME", ${quoteLua(versionDir)})`, `setenv("CUDA_PATH", ${quoteLua(versionDir)})`, '');
  return lines.join('\n');
}

/**
 * `cuda/.modulerc.lua`: `module load cuda/12.4` and `cuda/12` name the highest installed match,
 * as a spec does on the command line (Lmod matches full version names only).
 */
export function renderModulerc(labels: string[]): string {
  const best = new Map<string, string>();
  for (const label of labels) { // oldest first: later ones win
    const v = parseVersion(label);
    if (!v) continue;
    best.set(`${v.major}`, label);
    best.set(`${v.major}.${v.minor}`, label);
  }
  const lines = [MODULEFILE_MARKER];
  for (const [short, label] of best) {
    if (short !== label) lines.push(`module_version(${quoteLua(`cuda/${label}`)}, ${quoteLua(short)})`);
  }
  return `${lines.join('\n')}\n`;
}

export interface ModulefilesResult {
  dir: string;
  written: Array<{version: string; file: string}>;
  /** Files of versions no longer installed, removed. */
  removed: string[];
  ldLibraryPath: LdLibraryPathPolicy;
}

function isOurs(file: string): boolean {
  try {
    return readFileSync(file, 'utf8').startsWith(MODULEFILE_MARKER);
  } catch {
    return false;
  }
}

/** Writes `DIR/cuda/<version>.lua` for every usable version and removes cudaenv's stale ones. */
export function writeModulefiles(paths: StorePaths, dir: string, policy: LdLibraryPathPolicy): ModulefilesResult {
  const versions = listVersions(paths).filter((v) => !v.broken);
  const cudaDir = join(dir, 'cuda');
  const written: ModulefilesResult['written'] = [];
  try {
    for (const v of versions) {
      const file = join(cudaDir, `${v.label}.lua`);
      if (!isOurs(file) && exists(file)) {
        throw new CudaenvError(`${file} exists and was not written by cudaenv; leaving it alone`, {
          hint: 'Move it away, or write the modulefiles to another directory with --dir.',
        });
      }
      atomicWriteFile(file, renderModulefile({label: v.label, versionDir: v.path, policy}));
      written.push({version: v.label, file});
    }
    const rc = join(cudaDir, '.modulerc.lua');
    if (exists(rc) && !isOurs(rc)) throw new CudaenvError(`${rc} exists and was not written by cudaenv; leaving it alone`, {hint: 'Move it away, or use another --dir.'});
    atomicWriteFile(rc, renderModulerc(versions.map((v) => v.label)));
  } catch (error) {
    if (error instanceof CudaenvError) throw error;
    throw new CudaenvError(`cannot write modulefiles in ${cudaDir}: ${(error as Error).message}`, {
      hint: 'Choose a writable directory with --dir (on a cluster, one the users\' MODULEPATH includes).',
    });
  }
  const keep = new Set(written.map((w) => w.file));
  const removed: string[] = [];
  for (const name of safeList(cudaDir)) {
    const file = join(cudaDir, name);
    if (name.endsWith('.lua') && !name.startsWith('.') && !keep.has(file) && isOurs(file)) {
      rmSync(file, {force: true});
      removed.push(file);
    }
  }
  return {dir, written, removed, ldLibraryPath: policy};
}

function exists(file: string): boolean {
  try {
    readFileSync(file);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
