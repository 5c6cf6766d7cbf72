import {readFileSync} from 'node:fs';
import {homedir} from 'node:os';
import {join, resolve} from 'node:path';

/** Where everything of one store lives. Shims read `global`, `aliases/` and `resolve/` as plain files. */
export interface StorePaths {
  root: string;
  versions: string;
  cache: string;
  /** `cache/check`: the results of `cudaenv check`, each with the facts it rested on (src/core/elf/cache/verdict-cache.ts). */
  checkCache: string;
  shims: string;
  tmp: string;
  /** One file per alias, holding the spec it stands for. */
  aliases: string;
  /** Links `12`, `12.4`, `12.4.1`, `latest` -> `../versions/<label>`, so shims resolve a spec without listing. */
  resolve: string;
  /** The global default spec, one line. */
  globalFile: string;
  /** Settings written through `conf`. */
  configFile: string;
  locks: string;
}

/**
 * The store root: `$CUDAENV_DIR`, else `~/.cudaenv` of the invoking user. Under `sudo`
 * that is SUDO_USER's home, so `sudo cudaenv link` sees the user's toolkits, not root's.
 */
export function storeRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CUDAENV_DIR) return resolve(env.CUDAENV_DIR);
  const sudoUser = env.SUDO_USER;
  if (sudoUser && sudoUser !== 'root' && process.getuid?.() === 0) {
    const home = homeOf(sudoUser);
    if (home) return join(home, '.cudaenv');
  }
  return join(env.HOME || homedir(), '.cudaenv');
}

function homeOf(user: string): string | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const fields = line.split(':');
      if (fields[0] === user && fields[5]) return fields[5];
    }
  } catch {
    // No passwd file (some containers): fall back to root's own home.
  }
  return undefined;
}

export function storePaths(env: NodeJS.ProcessEnv = process.env): StorePaths {
  return pathsFor(storeRoot(env));
}

export function pathsFor(root: string): StorePaths {
  return {
    root,
    versions: join(root, 'versions'),
    cache: join(root, 'cache'),
    checkCache: join(root, 'cache', 'check'),
    shims: join(root, 'shims'),
    tmp: join(root, 'tmp'),
    aliases: join(root, 'aliases'),
    resolve: join(root, 'resolve'),
    globalFile: join(root, 'global'),
    configFile: join(root, 'config.json'),
    locks: join(root, 'locks'),
  };
}
