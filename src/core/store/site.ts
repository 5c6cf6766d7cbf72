import {existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync} from 'node:fs';
import {join, resolve} from 'node:path';
import {isErrno} from '../errors.js';
import {readFileSafely, removeSafely, symlinkSafely, writeFileSafely} from '../safe-fs/index.js';
import {isLabel} from '../versions/version.js';
import {pathsFor, type StorePaths} from './paths.js';

/**
 * Site stores (issue 45): stores a site installs once on a shared file system (NFS, Lustre,
 * CernVM-FS), read-only to a user's cudaenv, searched after the user's own store. They come from
 * CUDAENV_SITE_DIRS (colon-separated), else from the machine-wide file /etc/cudaenv/site-dirs
 * (one store per line; blank lines and `#` comments are skipped).
 *
 * A site store is never written, locked or listed at a shell prompt. What of it the user can use
 * is mirrored into the user's store, so that everything reading `<store>/versions/LABEL`
 * (the shims, the shell hook, conda hooks, modulefiles, exec, link) works unchanged:
 * - `versions/LABEL` -> `<site>/versions/LABEL` for each site version the user has none of
 *   their own (recorded in `site/links`, so that only these links are ever replaced or removed);
 * - `site/aliases/NAME` and `site/global`: the site's aliases and global default, read after the
 *   user's own (the user's of the same name win);
 * - `switch/sites`: what the shell hook compares at each prompt with builtins (each site's
 *   switch/generation), to notice a version the site added or removed.
 */

/** The machine-wide list; CUDAENV_SITE_DIRS_FILE names another file (the tests: never the machine's /etc). */
export const SITE_DIRS_FILE = '/etc/cudaenv/site-dirs';

export function siteDirsFile(env: NodeJS.ProcessEnv = process.env): string {
  return env.CUDAENV_SITE_DIRS_FILE ? resolve(env.CUDAENV_SITE_DIRS_FILE) : SITE_DIRS_FILE;
}

export type SiteState = 'ok' | 'missing' | 'not-a-directory' | 'unreadable' | 'not-a-store' | 'timeout' | 'not-checked';

export interface SiteStore {
  root: string;
  state: SiteState;
  /** The first line of the site's switch/generation ('-' when it has none, or it is not usable). */
  generation: string;
}

export interface SiteConfig {
  dirs: string[];
  /** Where the list came from, for messages: `CUDAENV_SITE_DIRS` or the file's path. */
  source: string;
  warnings: string[];
}

/** The site stores configured for this user, in order, the user's own store left out. */
export function configuredSiteDirs(userRoot: string, env: NodeJS.ProcessEnv = process.env): SiteConfig {
  const warnings: string[] = [];
  let raw: string[] = [];
  let source: string;
  if (env.CUDAENV_SITE_DIRS !== undefined) {
    source = 'CUDAENV_SITE_DIRS';
    raw = env.CUDAENV_SITE_DIRS.split(':');
  } else {
    source = siteDirsFile(env);
    try {
      raw = readFileSafely(source, 64 * 1024).toString('utf8').split('\n').map((l) => l.trim()).filter((l) => !l.startsWith('#'));
    } catch (error) {
      if (!isErrno(error, 'ENOENT')) warnings.push(`the site store list ${source} cannot be read (${(error as Error).message}); only your store (${userRoot}) is used: fix its permissions, or set CUDAENV_SITE_DIRS`);
      raw = [];
    }
  }
  const dirs: string[] = [];
  for (const entry of raw.map((s) => s.trim()).filter((s) => s !== '')) {
    if (!entry.startsWith('/')) {
      warnings.push(`site store "${entry}" (${source}) is not an absolute path; it is skipped: write it as /path/to/store`);
      continue;
    }
    const dir = resolve(entry);
    if (dir !== userRoot && !dirs.includes(dir)) dirs.push(dir);
  }
  return {dirs, source, warnings};
}

/** How long one look at the site stores may take (an NFS server that is down): CUDAENV_SITE_TIMEOUT_MS, 3 s by default. */
export function siteTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number(env.CUDAENV_SITE_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? n : 3000;
}

// Builtins of /bin/sh only: one process for all the sites, killed when it outlasts the timeout.
const PROBE = `for d do
  if [ ! -e "$d" ]; then echo missing
  elif [ ! -d "$d" ]; then echo not-a-directory
  elif [ ! -r "$d" ] || [ ! -x "$d" ]; then echo unreadable
  elif [ ! -d "$d/versions" ]; then echo not-a-store
  elif [ ! -r "$d/versions" ] || [ ! -x "$d/versions" ]; then echo unreadable
  elif [ -e "$d/switch/generation" ] && [ ! -d "$d/switch/generation" ]; then g=; IFS= read -r g < "$d/switch/generation"; echo "ok \${g:--}"
  else echo "ok -"
  fi
done`;

/**
 * Looks at each site store in a child process bounded by the timeout, so a mount that does not
 * answer (stat or open blocking) costs at most that time: the CLI itself never touches a site
 * store before it answered here.
 */
export function probeSites(dirs: string[], timeoutMs: number): SiteStore[] {
  if (dirs.length === 0) return [];
  // Loaded here: a command with no site store configured loads no child_process.
  const {spawnSync} = process.getBuiltinModule('node:child_process') as typeof import('node:child_process');
  const r = spawnSync('/bin/sh', ['-c', PROBE, 'cudaenv-site-probe', ...dirs], {encoding: 'utf8', timeout: timeoutMs, killSignal: 'SIGKILL', stdio: ['ignore', 'pipe', 'ignore']});
  const lines = (r.stdout ?? '').split('\n');
  return dirs.map((root, i) => {
    const line = lines[i];
    // The line after the last complete one is the store that did not answer; those after it were not looked at.
    if (line === undefined || i >= lines.length - 1) return {root, state: i === lines.length - 1 ? 'timeout' : 'not-checked', generation: '-'} as SiteStore;
    const state = (line.startsWith('ok ') ? 'ok' : line) as SiteState;
    return {root, state, generation: state === 'ok' ? line.slice(3) || '-' : '-'};
  });
}

/** One line per site store that cannot be used: what is wrong, and that the user's store goes on working. */
export function siteWarning(site: SiteStore, source: string, userRoot: string, timeoutMs: number): string | undefined {
  const why: Record<SiteState, string | undefined> = {
    ok: undefined,
    missing: 'does not exist',
    'not-a-directory': 'is not a directory',
    unreadable: 'cannot be read (permission denied)',
    'not-a-store': 'is not a cudaenv store (it has no versions/ directory)',
    timeout: `did not answer within ${timeoutMs} ms (a network mount that hangs?)`,
    'not-checked': 'was not looked at (a site store before it did not answer)',
  };
  const text = why[site.state];
  return text === undefined ? undefined : `site store ${site.root} (${source}) ${text}; it is skipped and your store ${userRoot} is used alone: fix the mount or the path, or remove it from ${source}`;
}

/** The mirror's own files in the user's store. */
export function siteDir(paths: StorePaths): string {
  return join(paths.root, 'site');
}
export function siteLinksFile(paths: StorePaths): string {
  return join(siteDir(paths), 'links');
}
export function siteStateFile(paths: StorePaths): string {
  return join(siteDir(paths), 'state');
}
export function siteAliasesDir(paths: StorePaths): string {
  return join(siteDir(paths), 'aliases');
}
export function siteGlobalFile(paths: StorePaths): string {
  return join(siteDir(paths), 'global');
}
/** Which site's global default site/global holds (its path, for `current`). */
export function siteGlobalFromFile(paths: StorePaths): string {
  return join(siteDir(paths), 'global.from');
}
/** What the shell hook compares at each prompt (see shims/shell/posix.sh _cudaenv_sitecheck). */
export function hookSitesFile(paths: StorePaths): string {
  return join(paths.root, 'switch', 'sites');
}

/** The links this user's store holds for site versions: label -> `<site>/versions/<label>`. */
export function readSiteLinks(paths: StorePaths): Map<string, string> {
  const out = new Map<string, string>();
  let text: string;
  try {
    text = readFileSafely(siteLinksFile(paths), 1024 * 1024).toString('utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab <= 0) continue;
    const label = line.slice(0, tab);
    if (isLabel(label)) out.set(label, line.slice(tab + 1));
  }
  return out;
}

/** The site store a version of the user's store comes from (undefined: the user's own). */
export function siteOfVersion(paths: StorePaths, label: string, links: Map<string, string> = readSiteLinks(paths)): string | undefined {
  const target = links.get(label);
  if (target === undefined) return undefined;
  try {
    if (readlinkSync(join(paths.versions, label)) !== target) return undefined;
  } catch {
    return undefined;
  }
  return target.slice(0, -`/versions/${label}`.length);
}

/**
 * Whether any site store is configured or mirrored for this user (CUDAENV_SITE_DIRS set, the site
 * list file there, or the user's store holding a mirror): two lstat calls, so that a start where none
 * is (nearly every machine) loads none of the mirror's code (src/fast-path.ts).
 */
export function sitesInPlay(paths: StorePaths, env: NodeJS.ProcessEnv = process.env): boolean {
  return env.CUDAENV_SITE_DIRS !== undefined || !absent(siteDirsFile(env)) || !absent(siteDir(paths));
}

/** Nothing at `path` (an error other than ENOENT, a directory that cannot be searched, is not "absent": the full path says why). */
function absent(path: string): boolean {
  try {
    return lstatSync(path, {throwIfNoEntry: false}) === undefined;
  } catch {
    return false;
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSafely(path, 64 * 1024).toString('utf8');
  } catch {
    return undefined;
  }
}

function linkValue(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

function siteLabels(root: string): string[] {
  const versions = pathsFor(root).versions;
  let names: string[];
  try {
    names = readdirSync(versions);
  } catch {
    return [];
  }
  // Usable only: a site's version that is an empty directory or a registration to nothing is no version.
  return names.filter((n) => isLabel(n) && holdsToolkit(join(versions, n)));
}

function holdsToolkit(dir: string): boolean {
  return ['bin', 'lib64', 'lib', '.cudaenv-receipt.json'].some((name) => {
    try {
      lstatSync(join(dir, name));
      return true;
    } catch {
      return false;
    }
  });
}

export interface SiteSync {
  sites: SiteStore[];
  source: string;
  warnings: string[];
  /** Whether the mirror changed (the resolve/ index, the hook's index and the shims follow). */
  changed: boolean;
}

/** The hook's comparison file: the CUDAENV_SITE_DIRS it was made for, then each site and its generation. */
export function hookSitesText(sites: SiteStore[], env: NodeJS.ProcessEnv): string {
  const head = env.CUDAENV_SITE_DIRS !== undefined ? `e${env.CUDAENV_SITE_DIRS}` : 'u';
  return `${[head, ...sites.map((s) => `${s.root}\t${s.generation}`)].join('\n')}\n`;
}

/**
 * Brings the user's mirror of the site stores up to date: cheap when nothing changed (one
 * bounded look at the sites, one small file read). `force`: recompute even so (the user's own
 * versions changed: an uninstall may uncover a site's version of the same label).
 */
export function syncSiteMirror(paths: StorePaths, env: NodeJS.ProcessEnv = process.env, force = false): SiteSync {
  // No site configured and none mirrored (nearly every machine): two lstat calls, no read. As root each
  // safe read below walks from / (a tenth of a cached check's own work in the PyTorch image).
  if (!sitesInPlay(paths, env)) {
    return {sites: [], source: siteDirsFile(env), warnings: [], changed: false};
  }
  const config = configuredSiteDirs(paths.root, env);
  const links = readSiteLinks(paths);
  const statePath = siteStateFile(paths);
  const previous = readText(statePath);
  // Nothing configured, nothing mirrored: no look at anything (the hook, too, then reads no more than a missing file).
  const listed = env.CUDAENV_SITE_DIRS !== undefined ? env.CUDAENV_SITE_DIRS !== '' : existsSync(config.source);
  if (config.dirs.length === 0 && links.size === 0 && previous === undefined && !listed) {
    return {sites: [], source: config.source, warnings: config.warnings, changed: false};
  }
  const timeoutMs = siteTimeoutMs(env);
  const sites = probeSites(config.dirs, timeoutMs);
  const warnings = [...config.warnings, ...sites.flatMap((s) => siteWarning(s, config.source, paths.root, timeoutMs) ?? [])];
  const state = `${hookSitesText(sites, env)}${sites.map((s) => s.state).join(' ')}\n`;
  if (!force && previous === state) return {sites, source: config.source, warnings, changed: false};
  const usable = sites.filter((s) => s.state === 'ok');

  // versions/: a link for each site label the user has none of their own; the first site wins.
  const wanted = new Map<string, string>();
  for (const site of usable) {
    for (const label of siteLabels(site.root)) {
      if (wanted.has(label)) continue;
      const own = join(paths.versions, label);
      const value = linkValue(own);
      let exists = value !== undefined;
      if (!exists) {
        try {
          lstatSync(own);
          exists = true;
        } catch {
          exists = false;
        }
      }
      if (exists && (value === undefined || links.get(label) !== value)) continue; // the user's own
      wanted.set(label, join(site.root, 'versions', label));
    }
  }
  mkdirSync(paths.versions, {recursive: true});
  for (const [label, target] of links) {
    if (wanted.has(label)) continue;
    if (linkValue(join(paths.versions, label)) === target) removeSafely(join(paths.versions, label));
  }
  for (const [label, target] of wanted) {
    if (linkValue(join(paths.versions, label)) !== target) symlinkSafely(join(paths.versions, label), target);
  }
  writeFileSafely(siteLinksFile(paths), [...wanted].map(([l, t]) => `${l}\t${t}\n`).join(''));

  // The site's aliases and global default, the first site's of each name.
  const aliases = new Map<string, string>();
  let global: {spec: string; from: string} | undefined;
  for (const site of usable) {
    const sp = pathsFor(site.root);
    let names: string[] = [];
    try {
      names = readdirSync(sp.aliases);
    } catch {
      names = [];
    }
    for (const name of names) {
      if (name.startsWith('.') || aliases.has(name) || !/^[A-Za-z][A-Za-z0-9_.-]{0,62}$/.test(name)) continue;
      const spec = readText(join(sp.aliases, name))?.trim();
      if (spec) aliases.set(name, spec);
    }
    const g = readText(sp.globalFile)?.trim();
    if (global === undefined && g) global = {spec: g, from: sp.globalFile};
  }
  const aliasDir = siteAliasesDir(paths);
  mkdirSync(aliasDir, {recursive: true});
  for (const name of readdirSync(aliasDir)) {
    if (!aliases.has(name)) removeSafely(join(aliasDir, name));
  }
  for (const [name, spec] of aliases) {
    if (readText(join(aliasDir, name)) !== `${spec}\n`) writeFileSafely(join(aliasDir, name), `${spec}\n`);
  }
  if (global) {
    writeFileSafely(siteGlobalFromFile(paths), `${global.from}\n`);
    writeFileSafely(siteGlobalFile(paths), `${global.spec}\n`);
  } else {
    removeSafely(siteGlobalFile(paths));
    removeSafely(siteGlobalFromFile(paths));
  }
  mkdirSync(join(paths.root, 'switch'), {recursive: true});
  writeFileSafely(hookSitesFile(paths), hookSitesText(sites, env));
  writeFileSafely(statePath, state);
  return {sites, source: config.source, warnings, changed: true};
}
