import {mkdirSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {writeFileSafely} from '../safe-fs/index.js';
import type {StorePaths} from '../store/paths.js';
import {isVersion} from '../versions/version.js';

/** What a completion script offers; versions and aliases are read from the store when completing. */
export interface CompletionModel {
  commands: Array<{name: string; summary: string; flags: Array<{name: string; summary: string; takesValue: boolean}>}>;
  /** Commands whose argument is an installed version or alias. */
  versionCommands: string[];
  /** Commands whose argument is a release on the mirror. */
  remoteCommands: string[];
  /** Releases to offer when no `ls-remote`/`install` has cached the mirror's list yet (the release table's). */
  knownReleases: string[];
  /** The store when CUDAENV_DIR is unset at completion time. */
  defaultStore: string;
}

export const VERSION_COMMANDS = ['use', 'local', 'global', 'uninstall', 'link', 'which'];
export const REMOTE_COMMANDS = ['install', 'ls-remote'];

/** The mirror's releases as last listed, one per line: completion reads it without a network. */
export function remoteCacheFile(paths: StorePaths): string {
  return join(paths.cache, 'remote-versions');
}

/** Best effort: a read-only store or full disk must not fail the listing that produced the labels. */
export function cacheRemoteVersions(paths: StorePaths, labels: string[]): void {
  try {
    mkdirSync(paths.cache, {recursive: true});
    writeFileSafely(remoteCacheFile(paths), labels.filter(isVersion).map((l) => `${l}\n`).join(''));
  } catch {
    // Completion falls back to the release table.
  }
}

export function readRemoteCache(paths: StorePaths): string[] {
  try {
    return readFileSync(remoteCacheFile(paths), 'utf8').split('\n').filter(isVersion);
  } catch {
    return [];
  }
}
