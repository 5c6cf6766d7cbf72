import {accessSync, constants, existsSync, realpathSync} from 'node:fs';
import {dirname} from 'node:path';
import {CudaenvError} from '../errors.js';
import type {StorePaths} from '../store/paths.js';
import {describeVersion} from '../store/registry.js';
import {detectToolkitVersion} from '../versions/detect.js';
import {parseVersion} from '../versions/version.js';
import {AltCommandError, groupNameOf, queryGroup, selectAlternative, type AltGroup, type AltOptions} from './alternatives.js';
import {checkSystemView, type LinkCheck} from './check.js';
import {refreshLoaderCache, type LoaderCacheStep} from './loader-cache.js';
import type {LdconfigOptions} from './ldconfig.js';
import {groupSubject, noteTouchedAlternative, readRecord, recordPrevious, type Previous} from './state.js';
import {isPermissionError, permissionError} from './sudo.js';
import {quoteSh} from '../text/quote.js';
import {inspectTarget, swapSymlink, type TargetState} from './swap.js';
import {requireRootOwnedToolkit, requireRootTarget} from './root-policy.js';
import {isDir} from '../fs-kind.js';

export interface LinkContext {
  paths: StorePaths;
  alt: AltOptions;
  ld: LdconfigOptions;
  /** The command's own arguments, for the `sudo ...` line of a permission error. */
  argv: string[];
  env: NodeJS.ProcessEnv;
}

export interface LinkResult {
  target: string;
  version: string;
  /** What the target now resolves to (the link's value, or the alternative selected). */
  path: string;
  mode: 'symlink' | 'alternatives';
  /** What was there before this command, in words. */
  before: string;
  /** What `cudaenv unlink` will restore. */
  restores: string;
  changed: boolean;
  dryRun: boolean;
  alternatives: Array<{group: string; link: string; added: boolean}>;
  ldconfig: LoaderCacheStep;
  check: LinkCheck | null;
  /** The steps, done or (with --dry-run) planned. */
  actions: string[];
}

/**
 * The directory a link to `label` should name: an installed version's directory in the store,
 * or for a registered toolkit the directory itself, so that other users and services reading
 * /usr/local/cuda do not depend on access to someone's home directory.
 */
export function linkValueFor(paths: StorePaths, label: string): string {
  const v = describeVersion(paths, label);
  if (!v) throw new CudaenvError(`CUDA ${label} is not in the store ${paths.versions}`, {code: 'not-installed'});
  if (v.kind === 'registered') {
    if (v.broken) {
      throw new CudaenvError(`CUDA ${label} is registered from ${v.target}, which no longer exists`, {
        hint: `Register it again (cudaenv add DIR --as ${label}) or pick another version.`,
        code: 'not-installed',
      });
    }
    const real = realpathSync(v.path);
    requireDirectory(real, label);
    // The link names the toolkit's own directory, not the store's entry: that directory must be root's.
    requireRootOwnedToolkit(real, label);
    return real;
  }
  requireDirectory(v.path, label);
  requireRootOwnedToolkit(v.path, label);
  return v.path;
}

/** A version is a toolkit's directory: a store entry that names a file is never linked. */
function requireDirectory(path: string, label: string): void {
  if (!isDir(path)) {
    throw new CudaenvError(`cannot link CUDA ${label}: ${path} is not a directory`, {
      hint: `A version is a toolkit's directory: remove the store's entry (cudaenv uninstall ${quoteSh(label)}) and add the toolkit's directory (cudaenv add DIR).`,
      code: 'not-a-toolkit',
    });
  }
}

/** `label`: the version the refused link was to name, which the hint's command links once the way is clear. */
export function refuseNonLink(target: string, state: TargetState, label: string): CudaenvError {
  const what = state.kind === 'directory' ? 'a directory' : state.kind === 'file' ? 'a file' : 'not a symbolic link';
  const version = state.kind === 'directory' ? detectToolkitVersion(target, false).version : undefined;
  const v = version ? parseVersion(version) : undefined;
  const aside = `${target}-${v ? `${v.major}.${v.minor}` : 'X.Y'}`;
  // The command asked for, whole: the version (plain `cudaenv link` would take .cuda-version's) and,
  // for another target, that target (plain `cudaenv link` would move /usr/local/cuda).
  const again = `cudaenv link ${quoteSh(label)}${target === '/usr/local/cuda' ? '' : ` --target ${quoteSh(target)}`}`;
  return new CudaenvError(`${target} is ${what}, not a link: cudaenv will not replace it (that would lose its contents)`, {
    hint: state.kind === 'directory'
      ? `Move it aside and register it, then link again: sudo mv ${quoteSh(target)} ${quoteSh(aside)} && cudaenv add ${quoteSh(aside)} && ${again}`
      : `Move or remove ${target} yourself, then run ${again} again.`,
    code: 'target-not-link',
  });
}

/** The alternatives groups a link of `label` moves: the target's own, and `cuda-<major>` if it exists. */
function groupsToMove(ctx: LinkContext, main: AltGroup, label: string): AltGroup[] {
  const groups = [main];
  const major = parseVersion(label)?.major;
  const name = `cuda-${major}`;
  if (major !== undefined && name !== main.name) {
    const g = queryGroup(ctx.alt, name);
    if (g) groups.push(g);
  }
  return groups;
}

function requireWritable(dir: string, what: string, path: string, ctx: LinkContext): void {
  try {
    accessSync(dir, constants.W_OK);
  } catch (error) {
    if (isPermissionError(error)) throw permissionError(what, path, ctx.argv, ctx.env, error);
    if (!existsSync(dir)) {
      throw new CudaenvError(`cannot ${what} ${path}: ${dir} does not exist`, {hint: `Create ${dir} first, or choose another --target.`});
    }
    throw error;
  }
}

function describePrevious(p: Previous): string {
  if (p.kind === 'absent') return 'nothing (the link is removed)';
  if (p.kind === 'symlink') return `a link to ${p.value}`;
  return p.groups.map((g) => `${g.name} in ${g.status} mode${g.status === 'manual' && g.value ? ` (${g.value})` : ''}`).join(', ');
}

function describeState(state: TargetState): string {
  return state.kind === 'symlink' ? `a link to ${state.value}` : state.kind === 'absent' ? 'nothing' : state.kind;
}

/**
 * `cudaenv link`: points `target` at the version, recording what was there first. A plain
 * link is swapped atomically; a target managed by update-alternatives is moved through it.
 */
export async function linkVersion(ctx: LinkContext, target: string, label: string, dryRun: boolean): Promise<LinkResult> {
  const value = linkValueFor(ctx.paths, label);
  const state = inspectTarget(target);
  if (state.kind === 'directory' || state.kind === 'file' || state.kind === 'other') throw refuseNonLink(target, state, label);
  const dir = dirname(target);
  const groupName = state.kind === 'symlink' ? groupNameOf(state.value, dir, ctx.alt) : undefined;
  const main = groupName ? queryGroup(ctx.alt, groupName) : undefined;
  const base = {target, version: label, path: value, before: describeState(state), dryRun, check: null as LinkCheck | null};
  requireRootTarget(target, state.kind, Boolean(main && main.link === target) || readRecord(ctx.paths, target, ctx.env) !== undefined, ctx.env);

  if (main && main.link === target) {
    const groups = groupsToMove(ctx, main, label);
    const previous = readRecord(ctx.paths, target, ctx.env)?.previous ?? {kind: 'alternatives' as const, groups: groups.map(({name, status, value: v}) => ({name, status, value: v}))};
    const alternatives = groups.map((g) => ({group: g.name, link: g.link, added: !g.alternatives.some((a) => a.path === value)}));
    const actions = groups.flatMap((g) => [
      ...(alternatives.find((a) => a.group === g.name)!.added ? [`register ${value} as an alternative of ${g.name}`] : []),
      `select ${value} for ${g.name} (manual mode)`,
    ]);
    const changed = groups.some((g) => g.value !== value || g.status !== 'manual');
    if (dryRun) {
      return {...base, mode: 'alternatives', restores: describePrevious(previous), changed, alternatives, ldconfig: refreshLoaderCache(ctx.ld, groups.map((g) => g.link), 'plan'), actions};
    }
    requireWritable(ctx.alt.altdir, 'change the alternatives in', ctx.alt.altdir, ctx);
    const record = recordPrevious(ctx.paths, target, previous, ctx.env);
    for (const g of groups) {
      recordPrevious(ctx.paths, groupSubject(ctx.alt.altdir, g.name), {kind: 'alternatives', groups: [{name: g.name, status: g.status, value: g.value}]}, ctx.env);
      const added = alternatives.find((a) => a.group === g.name)!.added;
      // Noted before the change, so an interrupted link can still be undone.
      noteTouchedAlternative(ctx.paths, target, {group: g.name, path: value, added}, ctx.env);
      try {
        selectAlternative(ctx.alt, g, value);
      } catch (error) {
        if (error instanceof AltCommandError && error.permissionDenied) throw permissionError('change the alternatives group', g.name, ctx.argv, ctx.env, error);
        throw error;
      }
    }
    const ldconfig = refreshLoaderCache(ctx.ld, groups.map((g) => g.link), changed ? 'run' : 'unchanged');
    return {...base, mode: 'alternatives', restores: describePrevious(record.previous), changed, alternatives, ldconfig, actions, check: await checkSystemView(target, ctx.ld)};
  }

  const previous: Previous = state.kind === 'symlink' ? {kind: 'symlink', value: state.value} : {kind: 'absent'};
  const known = readRecord(ctx.paths, target, ctx.env);
  const changed = !(state.kind === 'symlink' && state.value === value);
  const actions = [changed ? `point ${target} at ${value}` : `${target} already points at ${value}`];
  if (dryRun) {
    return {...base, mode: 'symlink', restores: describePrevious(known?.previous ?? previous), changed, alternatives: [], ldconfig: refreshLoaderCache(ctx.ld, [target], changed ? 'plan' : 'unchanged'), actions};
  }
  requireWritable(dir, 'change', target, ctx);
  const record = recordPrevious(ctx.paths, target, previous, ctx.env);
  if (changed) {
    try {
      swapSymlink(target, value);
    } catch (error) {
      if (isPermissionError(error)) throw permissionError('change', target, ctx.argv, ctx.env, error);
      throw error;
    }
  }
  const ldconfig = refreshLoaderCache(ctx.ld, [target], changed ? 'run' : 'unchanged');
  return {...base, mode: 'symlink', restores: describePrevious(record.previous), changed, alternatives: [], ldconfig, actions, check: await checkSystemView(target, ctx.ld)};
}
