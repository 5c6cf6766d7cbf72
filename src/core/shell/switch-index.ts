import {existsSync, mkdirSync, readdirSync, readlinkSync} from 'node:fs';
import {basename, join} from 'node:path';
import {writeFileSafely} from '../safe-fs/index.js';
import type {StorePaths} from '../store/paths.js';
import {listAliases, listSiteAliases} from '../store/registry.js';
import {isLabel} from '../versions/version.js';

/**
 * The shell hook resolves a spec without starting a process, and bash cannot read a link:
 * switch/index holds the resolve/ links as one line " SPEC=LABEL SPEC=LABEL ... ".
 * switch/generation holds a short hash of it: the hook reads that tiny file at every
 * prompt (as part of its key) and the index only when something changed.
 */
/**
 * The shell integration's own directory, `switch/` in the store: not under cache/, which
 * holds only verified downloads (the installer checks every file there).
 */
export function switchDir(paths: StorePaths): string {
  return join(paths.root, 'switch');
}

/** A store made before the shell integration existed has versions but no index yet. */
export function needsRehash(paths: StorePaths): boolean {
  return existsSync(paths.versions) && !existsSync(join(switchDir(paths), 'generation'));
}

export function writeSwitchIndex(paths: StorePaths): string {
  const dir = switchDir(paths);
  mkdirSync(dir, {recursive: true});
  const pairs: string[] = [];
  let names: string[] = [];
  try {
    names = readdirSync(paths.resolve);
  } catch {
    names = [];
  }
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    try {
      const label = basename(readlinkSync(join(paths.resolve, name)));
      if (isLabel(label)) pairs.push(`${name}=${label}`);
    } catch {
      // not a link: ignore
    }
  }
  const text = ` ${pairs.join(' ')} \n`;
  writeFileSafely(join(dir, 'index'), text);
  // Aliases count too: a shell switched through `stable` must follow `cudaenv alias stable 11`
  // at its next prompt, as `cudaenv current` and the shims do.
  let aliases = '';
  try {
    aliases = JSON.stringify([listAliases(paths), listSiteAliases(paths)]);
  } catch {
    // an unreadable alias file: the versions alone still key the hook
  }
  writeFileSafely(join(dir, 'generation'), `${crypto().createHash('sha256').update(text).update(aliases).digest('hex').slice(0, 16)}\n`);
  return text;
}

/** node:crypto on first use: `cudaenv use` and the shell's fast paths load this module without hashing. */
function crypto(): typeof import('node:crypto') {
  return process.getBuiltinModule('node:crypto');
}
