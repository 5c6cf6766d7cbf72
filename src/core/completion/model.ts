import {mkdirSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {writeFileSafely} from '../safe-fs/index.js';
import type {StorePaths} from '../store/paths.js';
import {isVersion} from '../versions/version.js';

/** What a completion script offers; versions and aliases are read from the store when completing. */
export interface CompletionModel {
  /** Every command by its words (`conda hook install`), with its flags. */
  commands: Array<{name: string; summary: string; flags: Array<{name: string; summary: string; takesValue: boolean}>}>;
  /** Commands whose argument is one of the store's versions or aliases, and which of them it takes. */
  versionCommands: Record<string, ArgumentKind>;
  /** Commands whose argument is a release on the mirror. */
  remoteCommands: string[];
  /** Releases to offer when no `ls-remote`/`install` has cached the mirror's list yet (the release table's). */
  knownReleases: string[];
  /** The store when CUDAENV_DIR is unset at completion time. */
  defaultStore: string;
}

/**
 * What an argument accepts: `spec` any spec (installed versions, aliases, `system`, `latest`);
 * `spec-no-system` the same but `system` (link); `installed` installed version labels only
 * (uninstall refuses aliases, `system` and `latest`); `alias` alias names (unalias).
 */
export type ArgumentKind = 'spec' | 'spec-no-system' | 'installed' | 'alias';

export const VERSION_COMMANDS: Record<string, ArgumentKind> = {
  use: 'spec', local: 'spec', global: 'spec', link: 'spec-no-system', uninstall: 'installed', unalias: 'alias',
  'conda hook install': 'spec-no-system',
};
export const REMOTE_COMMANDS = ['install', 'ls-remote'];

/** The words that may follow a command's words: `conda` -> `hook`, `conda hook` -> `install` ..., `cache` -> `clean`. */
export function subcommands(names: string[]): Map<string, string[]> {
  const children = new Map<string, string[]>();
  for (const name of names) {
    const words = name.split(' ');
    for (let i = 0; i < words.length; i++) {
      const parent = words.slice(0, i).join(' ');
      const list = children.get(parent) ?? [];
      if (!list.includes(words[i]!)) list.push(words[i]!);
      children.set(parent, list);
    }
  }
  for (const list of children.values()) list.sort();
  return children;
}

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
