import {existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync} from 'node:fs';
import {join, resolve} from 'node:path';
import {CudaenvError, isErrno} from '../errors.js';
import {isLabel, parseVersion, sortVersionLabels} from '../versions/version.js';
import {writeFileSafely} from '../safe-fs/index.js';
import {pathsFor, type StorePaths} from './paths.js';
import {readSiteLinks, siteAliasesDir, siteGlobalFile, siteGlobalFromFile, siteOfVersion} from './site.js';
import {symlinkSafely} from '../safe-fs/index.js';

export const RECEIPT_FILE = '.cudaenv-receipt.json';

export interface StoredVersion {
  label: string;
  /** The version directory under the store (a link for registered toolkits). */
  path: string;
  kind: 'installed' | 'registered';
  /** For a registered toolkit, the directory it points to. */
  target?: string;
  /** A registered toolkit whose directory has gone, or an installed one that holds no toolkit (empty, or neither receipt, bin/ nor lib). */
  broken: boolean;
  /** The store it comes from: the user's own, or a site store (issue 45; reached through a link in versions/). */
  store: string;
  /** Whether that store is a site store. */
  site: boolean;
}

/**
 * Every version in the store, oldest first (12.4.1-local right after 12.4.1). Entries that are not
 * labels (staging leftovers) are ignored.
 */
export function listVersions(paths: StorePaths): StoredVersion[] {
  let names: string[];
  try {
    names = readdirSync(paths.versions);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw new CudaenvError(`cannot list ${paths.versions}: ${(error as Error).message}`, {
      hint: 'Check the permissions of the cudaenv store (CUDAENV_DIR).',
    });
  }
  const out: StoredVersion[] = [];
  const links = readSiteLinks(paths);
  for (const label of sortVersionLabels(names.filter(isLabel))) {
    const info = describeVersion(paths, label, links);
    if (info) out.push(info);
  }
  return out;
}

export function describeVersion(paths: StorePaths, label: string, links?: Map<string, string>): StoredVersion | undefined {
  const path = join(paths.versions, label);
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return undefined;
  }
  const own = {store: paths.root, site: false};
  if (st.isSymbolicLink()) {
    const site = siteOfVersion(paths, label, links ?? readSiteLinks(paths));
    if (site !== undefined) {
      // A site's version, as the site store describes it (installed there, or registered there).
      const inSite = describeVersion(pathsFor(site), label, new Map());
      return inSite ? {...inSite, path, store: site, site: true} : {label, path, kind: 'installed', broken: true, store: site, site: true};
    }
    const target = resolve(paths.versions, readlinkSync(path));
    return {label, path, kind: 'registered', target, broken: !existsSync(target), ...own};
  }
  if (!st.isDirectory()) return undefined;
  // An empty directory (a mkdir by hand, a copy that never came) is no installed version (issue 44):
  // it would win `use 12` and give a shell a PATH into nothing.
  const holdsToolkit = ['bin', 'lib64', 'lib', RECEIPT_FILE].some((name) => existsSync(join(path, name)));
  return {label, path, kind: 'installed', broken: !holdsToolkit, ...own};
}

export function installedLabels(paths: StorePaths): string[] {
  return listVersions(paths).filter((v) => !v.broken).map((v) => v.label);
}

// ---- global default and aliases: plain one-line files, so shims can read them ----

export function readSpecFile(path: string): string | undefined {
  try {
    const text = readFileSync(path, 'utf8').trim();
    return text === '' ? undefined : text;
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw new CudaenvError(`cannot read ${path}: ${(error as Error).message}`, {hint: 'Check the permissions of the cudaenv store.'});
  }
}

export function readGlobal(paths: StorePaths): string | undefined {
  return readSpecFile(paths.globalFile);
}

/** The global default in effect: the user's, else a site store's (issue 45), with the file it comes from. */
export function readEffectiveGlobal(paths: StorePaths): {spec: string; path: string; site: boolean} | undefined {
  const own = readGlobal(paths);
  if (own !== undefined) return {spec: own, path: paths.globalFile, site: false};
  const site = readSpecFile(siteGlobalFile(paths));
  if (site === undefined) return undefined;
  return {spec: site, path: readSpecFile(siteGlobalFromFile(paths)) ?? siteGlobalFile(paths), site: true};
}

export function writeGlobal(paths: StorePaths, spec: string | undefined): void {
  if (spec === undefined) rmSync(paths.globalFile, {force: true});
  else writeFileSafely(paths.globalFile, `${spec}\n`);
}

export function aliasPath(paths: StorePaths, name: string): string {
  return join(paths.aliases, name);
}

/** The user's alias, else a site store's of that name (issue 45: the user's own wins). */
export function readAlias(paths: StorePaths, name: string): string | undefined {
  return readSpecFile(aliasPath(paths, name)) ?? readSiteAlias(paths, name);
}

export function readSiteAlias(paths: StorePaths, name: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9_.-]{0,62}$/.test(name)) return undefined;
  return readSpecFile(join(siteAliasesDir(paths), name));
}

/** The site stores' aliases the user has none of their own of (`cudaenv alias` lists them apart). */
export function listSiteAliases(paths: StorePaths): Array<{name: string; spec: string}> {
  let names: string[];
  try {
    names = readdirSync(siteAliasesDir(paths));
  } catch {
    return [];
  }
  return names.filter((n) => !n.startsWith('.') && !existsSync(aliasPath(paths, n))).sort().flatMap((name) => {
    const spec = readSiteAlias(paths, name);
    return spec ? [{name, spec}] : [];
  });
}

export function writeAlias(paths: StorePaths, name: string, spec: string): void {
  writeFileSafely(aliasPath(paths, name), `${spec}\n`);
}

export function removeAlias(paths: StorePaths, name: string): boolean {
  const path = aliasPath(paths, name);
  if (!existsSync(path)) return false;
  rmSync(path, {force: true});
  return true;
}

export function listAliases(paths: StorePaths): Array<{name: string; spec: string}> {
  let names: string[];
  try {
    names = readdirSync(paths.aliases);
  } catch {
    return [];
  }
  return names.filter((n) => !n.startsWith('.')).sort().flatMap((name) => {
    const spec = readAlias(paths, name);
    return spec ? [{name, spec}] : [];
  });
}

export function ensureStoreDirs(paths: StorePaths): void {
  for (const dir of [paths.root, paths.versions, paths.cache, paths.shims, paths.tmp, paths.aliases, paths.resolve]) {
    try {
      mkdirSync(dir, {recursive: true});
    } catch (error) {
      throw new CudaenvError(`cannot create ${dir}: ${(error as Error).message}`, {
        hint: 'Set CUDAENV_DIR to a writable directory, or fix the permissions of the store.',
      });
    }
  }
}

/**
 * Rewrites `resolve/`: for every usable version, links for `MAJOR`, `MAJOR.MINOR`, the full
 * label and `latest` point at the highest match; a suffixed label (12.4.1-local) has its own
 * link only, so it never wins `use 12.4` or `latest`. Each link is replaced by a rename, so a
 * shim running meanwhile sees the old target or the new one.
 */
export function refreshResolveIndex(paths: StorePaths): void {
  mkdirSync(paths.resolve, {recursive: true});
  const wanted = new Map<string, string>();
  for (const label of installedLabels(paths)) { // oldest first: later ones win
    const v = parseVersion(label);
    if (!v) { // a suffixed label: selected by its exact name only
      wanted.set(label, label);
      continue;
    }
    for (const key of [`${v.major}`, `${v.major}.${v.minor}`, label, 'latest']) wanted.set(key, label);
  }
  for (const [key, label] of wanted) {
    const link = join(paths.resolve, key);
    const target = join('..', 'versions', label);
    let current: string | undefined;
    try {
      current = readlinkSync(link);
    } catch {
      current = undefined;
    }
    if (current === target) continue;
    symlinkSafely(link, target);
  }
  for (const name of readdirSync(paths.resolve)) {
    if (!wanted.has(name)) rmSync(join(paths.resolve, name), {force: true});
  }
}
