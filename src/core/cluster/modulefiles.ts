import {readFileSync, readdirSync, rmSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError} from '../errors.js';
import {quoteLua, quoteTcl} from '../text/quote.js';
import {toolkitLibDir, type LdLibraryPathPolicy} from '../shell/toolkit-env.js';
import {writeFileSafely} from '../safe-fs/index.js';
import type {StorePaths} from '../store/paths.js';
import {listVersions} from '../store/registry.js';
import {parseVersion} from '../versions/version.js';

/** First line of every file cudaenv writes: only such files are ever replaced or removed. */
export const MODULEFILE_MARKER = '-- Written by cudaenv (`cudaenv modulefiles`); edits are overwritten.';
/**
 * The start of every Tcl modulefile cudaenv writes: Environment Modules reads only files that begin
 * with the `#%Module` cookie, so the marker is the line after it.
 */
export const TCL_MODULEFILE_START = '#%Module1.0\n# Written by cudaenv (`cudaenv modulefiles --format tcl`); edits are overwritten.';

/**
 * lua: Lmod's own format (cuda/<version>.lua, cuda/.modulerc.lua). tcl: Tcl modulefiles
 * (cuda/<version>, cuda/.modulerc), which Environment Modules (RHEL's `module`, versions 4 and 5)
 * and Lmod both read.
 */
export type ModulefileFormat = 'lua' | 'tcl';

export interface ModulefileInput {
  format?: ModulefileFormat;
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
  if (input.format === 'tcl') return renderTclModulefile(input);
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
 * The same as a Tcl modulefile. `conflict cuda` keeps two cuda modules from being loaded at once,
 * in every Environment Modules release and in Lmod (`module switch cuda cuda/12.6` moves between
 * them); `family` is newer than the Environment Modules of RHEL 8 (4.5).
 */
function renderTclModulefile(input: ModulefileInput): string {
  const {label, versionDir} = input;
  const lines = [
    TCL_MODULEFILE_START,
    `module-whatis ${quoteTcl(`Name: CUDA Toolkit`)}`,
    `module-whatis ${quoteTcl(`Version: ${label}`)}`,
    `module-whatis ${quoteTcl(`Description: NVIDIA CUDA Toolkit ${label} (${versionDir})`)}`,
    `proc ModulesHelp {} { puts stderr ${quoteTcl(`CUDA Toolkit ${label} from the cudaenv store: ${versionDir}`)} }`,
    'conflict cuda',
    `prepend-path PATH ${quoteTcl(join(versionDir, 'bin'))}`,
  ];
  if (input.policy === 'prepend') lines.push(`prepend-path LD_LIBRARY_PATH ${quoteTcl(toolkitLibDir(versionDir))}`);
  lines.push(`setenv CUDA_HOME ${quoteTcl(versionDir)}`, `setenv CUDA_PATH ${quoteTcl(versionDir)}`, '');
  return lines.join('\n');
}

/** For each short name (12, 12.4), the highest installed version it names. */
function shortNames(labels: string[]): Map<string, string> {
  const best = new Map<string, string>();
  for (const label of labels) { // oldest first: later ones win
    const v = parseVersion(label);
    if (!v) continue;
    best.set(`${v.major}`, label);
    best.set(`${v.major}.${v.minor}`, label);
  }
  for (const [short, label] of best) if (short === label) best.delete(short);
  return best;
}

/**
 * `cuda/.modulerc.lua` (or, for tcl, `cuda/.modulerc`): `module load cuda/12.4` and `cuda/12`
 * name the highest installed match, as a spec does on the command line (the module tools match
 * full version names only).
 */
export function renderModulerc(labels: string[], format: ModulefileFormat = 'lua'): string {
  const best = shortNames(labels);
  if (format === 'tcl') {
    const lines = [TCL_MODULEFILE_START.replace('#%Module1.0', '#%Module')];
    for (const [short, label] of best) lines.push(`module-version ${quoteTcl(`cuda/${label}`)} ${quoteTcl(short)}`);
    return `${lines.join('\n')}\n`;
  }
  const lines = [MODULEFILE_MARKER];
  for (const [short, label] of best) lines.push(`module_version(${quoteLua(`cuda/${label}`)}, ${quoteLua(short)})`);
  return `${lines.join('\n')}\n`;
}

export interface ModulefilesResult {
  dir: string;
  format: ModulefileFormat;
  written: Array<{version: string; file: string}>;
  /** Files of versions no longer installed, removed. */
  removed: string[];
  /** What the files cannot do everywhere (Lmod and a Tcl path with `"` or `\`). */
  warnings: string[];
  ldLibraryPath: LdLibraryPathPolicy;
}

/** Written by cudaenv, in either format (the Tcl modulerc's cookie is the short `#%Module`). */
function isOurs(file: string): boolean {
  try {
    const text = readFileSync(file, 'utf8');
    return text.startsWith(MODULEFILE_MARKER) || text.replace(/^#%Module(?:1\.0)?\n/, '#%Module1.0\n').startsWith(TCL_MODULEFILE_START);
  } catch {
    return false;
  }
}

/**
 * Writes `DIR/cuda/<version>.lua` (tcl: `DIR/cuda/<version>`) for every usable version and removes
 * cudaenv's other files there: versions no longer installed, and those of the other format (Lmod
 * would see both).
 */
export function writeModulefiles(paths: StorePaths, dir: string, policy: LdLibraryPathPolicy, format: ModulefileFormat = 'lua'): ModulefilesResult {
  const versions = listVersions(paths).filter((v) => !v.broken);
  const cudaDir = join(dir, 'cuda');
  const suffix = format === 'lua' ? '.lua' : '';
  const written: ModulefilesResult['written'] = [];
  const rc = join(cudaDir, format === 'lua' ? '.modulerc.lua' : '.modulerc');
  try {
    for (const v of versions) {
      const file = join(cudaDir, `${v.label}${suffix}`);
      if (!isOurs(file) && exists(file)) {
        throw new CudaenvError(`${file} exists and was not written by cudaenv; leaving it alone`, {
          hint: 'Move it away, or write the modulefiles to another directory with --dir.',
        });
      }
      writeFileSafely(file, renderModulefile({format, label: v.label, versionDir: v.path, policy}));
      written.push({version: v.label, file});
    }
    if (exists(rc) && !isOurs(rc)) throw new CudaenvError(`${rc} exists and was not written by cudaenv; leaving it alone`, {hint: 'Move it away, or use another --dir.'});
    writeFileSafely(rc, renderModulerc(versions.map((v) => v.label), format));
  } catch (error) {
    if (error instanceof CudaenvError) throw error;
    throw new CudaenvError(`cannot write modulefiles in ${cudaDir}: ${(error as Error).message}`, {
      hint: 'Choose a writable directory with --dir (on a cluster, one the users\' MODULEPATH includes).',
    });
  }
  const keep = new Set([...written.map((w) => w.file), rc]);
  const removed: string[] = [];
  for (const name of safeList(cudaDir)) {
    const file = join(cudaDir, name);
    if (!keep.has(file) && !name.endsWith('.tmp') && isOurs(file)) {
      rmSync(file, {force: true});
      removed.push(file);
    }
  }
  // Lmod turns a Tcl prepend-path into Lua without escaping (tcl2lua's output-path-foo, Lmod 8.6):
  // such a path fails there, though Environment Modules reads it exactly.
  const misread = format === 'tcl' ? versions.find((v) => /["\\]/.test(v.path)) : undefined;
  const warnings = misread ? [`the store path ${misread.path} has a " or \\, which Lmod misreads in Tcl modulefiles: for Lmod, write the lua format (the default)`] : [];
  return {dir, format, written, removed, warnings, ldLibraryPath: policy};
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
