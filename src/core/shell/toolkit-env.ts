import {existsSync} from 'node:fs';
import {join} from 'node:path';

export type LdLibraryPathPolicy = 'prepend' | 'none';

/** The library directory of a toolkit: lib64 where it exists (it may be a link to lib), else lib. */
export function toolkitLibDir(versionDir: string): string {
  const lib64 = join(versionDir, 'lib64');
  return existsSync(lib64) ? lib64 : join(versionDir, 'lib');
}

/** Splits a colon list keeping empty entries (an empty entry means the current directory to ld.so). */
export function splitPathList(value: string | undefined): string[] {
  return value === undefined || value === '' ? [] : value.split(':');
}

function isUnder(entry: string, dir: string): boolean {
  return entry === dir || entry.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/**
 * The environment a command gets under a version (for `exec` and the switch check):
 * the version's bin first on PATH, CUDA_HOME/CUDA_PATH, and lib64 per the policy.
 * Entries pointing into any store version are dropped first, so a version active in
 * the calling shell does not leak into the command.
 */
export function toolkitEnvironment(
  env: NodeJS.ProcessEnv,
  versionDir: string | undefined,
  storeVersionsDir: string,
  policy: LdLibraryPathPolicy,
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {...env};
  const keep = (e: string) => !isUnder(e, storeVersionsDir);
  const path = splitPathList(env.PATH).filter(keep);
  const ld = splitPathList(env.LD_LIBRARY_PATH).filter(keep);
  if (versionDir) {
    path.unshift(join(versionDir, 'bin'));
    if (policy === 'prepend') ld.unshift(toolkitLibDir(versionDir));
    out.CUDA_HOME = versionDir;
    out.CUDA_PATH = versionDir;
  } else {
    for (const key of ['CUDA_HOME', 'CUDA_PATH'] as const) {
      if (env[key] && isUnder(env[key]!, storeVersionsDir)) delete out[key];
    }
  }
  out.PATH = path.join(':');
  if (ld.length > 0) out.LD_LIBRARY_PATH = ld.join(':');
  else if (env.LD_LIBRARY_PATH !== undefined && splitPathList(env.LD_LIBRARY_PATH).length !== ld.length) delete out.LD_LIBRARY_PATH;
  return out;
}
