import {cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {temporaryName} from '../core/safe-fs/index.js';

/**
 * Where the action keeps archives between runs. The seam between the action and GitHub's
 * cache: the Actions cache service in a workflow, or a directory (CUDAENV_ACTION_CACHE_DIR)
 * for self-hosted runners without that service and for tests. Both have the Actions cache's
 * rules: an entry is immutable once saved; lookup takes the exact key, else the newest entry
 * whose key starts with one of the restore keys.
 */
export interface CacheService {
  readonly name: string;
  /** Why it cannot be used here, or undefined when it can. */
  unavailable(): Promise<string | undefined>;
  /** Fills `dir`; the matched key, or undefined on a miss. */
  restore(dir: string, key: string, restoreKeys: string[]): Promise<string | undefined>;
  /** False when the entry was not saved and the service already said why (another job saved it first...). */
  save(dir: string, key: string): Promise<boolean>;
}

/** A failure the service's library already reported on the log (the step need not say it again). */
export class ReportedCacheFailure extends Error {}

/**
 * @actions/cache catches its own failures (service down, refused token) and only writes a warning,
 * then answers as for a miss. The step must know, or it would try to save to the same dead service
 * and have a second warning written: this watches what is written while `fn` runs.
 */
async function failureReported<T>(fn: () => Promise<T>): Promise<T> {
  const stdout = process.stdout;
  const write = stdout.write;
  let failure: string | undefined;
  stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
    const m = /^::warning::Failed to restore: ([^\n]*)/m.exec(String(chunk));
    if (m) failure ??= m[1]!.split('%0A')[0];
    return (write as (...a: unknown[]) => boolean).call(stdout, chunk, ...rest);
  }) as typeof stdout.write;
  try {
    const value = await fn();
    if (failure !== undefined) throw new ReportedCacheFailure(failure);
    return value;
  } finally {
    stdout.write = write;
  }
}

/** @actions/cache brings the Azure storage client: loaded only by a run that talks to the service. */
const library = (): Promise<typeof import('@actions/cache')> => import('@actions/cache');

export function actionsCacheService(env: NodeJS.ProcessEnv = process.env): CacheService {
  return {
    name: 'the Actions cache',
    // Without either variable the library (and its Azure client) is not even loaded.
    unavailable: async () => (env.ACTIONS_RESULTS_URL || env.ACTIONS_CACHE_URL) && (await library()).isFeatureAvailable() ? undefined
      : 'the Actions cache service is not available to this runner (no ACTIONS_CACHE_URL or ACTIONS_RESULTS_URL)',
    restore: async (dir, key, restoreKeys) => {
      const lib = await library();
      return failureReported(() => lib.restoreCache([dir], key, restoreKeys));
    },
    save: async (dir, key) => {
      // -1: the library logged why (another job saved the key first, or the service refused).
      return await (await library()).saveCache([dir], key) !== -1;
    },
  };
}

/** Entry names on disk: the key percent-encoded (`~` too), then `%` written `~`: one name per key. */
export function entryName(key: string): string {
  return encodeURIComponent(key).replace(/~/g, '%7E').replace(/%/g, '~');
}

function keyOf(name: string): string {
  return decodeURIComponent(name.replace(/~/g, '%'));
}

export function directoryCacheService(root: string): CacheService {
  return {
    name: `the cache directory ${root}`,
    unavailable: async () => existsSync(root) ? undefined : `the cache directory ${root} (CUDAENV_ACTION_CACHE_DIR) does not exist`,
    async restore(dir, key, restoreKeys) {
      const entries = readdirSync(root).filter((n) => !n.startsWith('.')).map((n) => ({key: keyOf(n), path: join(root, n), time: statSync(join(root, n)).mtimeMs}));
      const hit = entries.find((e) => e.key === key)
        ?? restoreKeys.map((p) => entries.filter((e) => e.key.startsWith(p)).sort((a, b) => b.time - a.time)[0]).find(Boolean);
      if (!hit) return undefined;
      rmSync(dir, {recursive: true, force: true});
      cpSync(hit.path, dir, {recursive: true});
      return hit.key;
    },
    async save(dir, key) {
      const dest = join(root, entryName(key));
      if (existsSync(dest)) return true; // immutable, as in the Actions cache
      const tmp = join(root, temporaryName(entryName(key)));
      mkdirSync(root, {recursive: true});
      cpSync(dir, tmp, {recursive: true});
      try {
        renameSync(tmp, dest);
      } catch (error) {
        rmSync(tmp, {recursive: true, force: true});
        if (!existsSync(dest)) throw error;
      }
      return true;
    },
  };
}

/** The service in effect: a directory when CUDAENV_ACTION_CACHE_DIR names one, else the Actions cache. */
export function cacheServiceFor(env: NodeJS.ProcessEnv): CacheService {
  return env.CUDAENV_ACTION_CACHE_DIR ? directoryCacheService(env.CUDAENV_ACTION_CACHE_DIR) : actionsCacheService(env);
}
