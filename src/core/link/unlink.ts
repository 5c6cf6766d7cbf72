import {accessSync, constants} from 'node:fs';
import {dirname} from 'node:path';
import {CudaenvError} from '../errors.js';
import {AltCommandError, queryGroup, removeAlternative, restoreGroup} from './alternatives.js';
import {refreshLoaderCache, type LoaderCacheStep} from './loader-cache.js';
import type {LinkContext} from './link.js';
import {forgetRecord, groupSubject, readRecord, touchedAlternatives, type Previous} from './state.js';
import {isPermissionError, permissionError} from './sudo.js';
import {inspectTarget, removeSymlink, swapSymlink} from './swap.js';

export interface UnlinkResult {
  target: string;
  mode: 'symlink' | 'alternatives';
  /** What the target pointed at before, in words. */
  replaced: string;
  restored: string;
  /** Alternatives cudaenv had registered and removed again. */
  removedAlternatives: Array<{group: string; path: string}>;
  ldconfig: LoaderCacheStep;
}

function guard<T>(ctx: LinkContext, what: string, path: string, action: () => T): T {
  try {
    return action();
  } catch (error) {
    if (isPermissionError(error) || (error instanceof AltCommandError && error.permissionDenied)) throw permissionError(what, path, ctx.argv, ctx.env, error);
    throw error;
  }
}

/** `cudaenv unlink`: puts back what the first `cudaenv link` of this target found there. */
export function unlinkTarget(ctx: LinkContext, target: string): UnlinkResult {
  const record = readRecord(ctx.paths, target, ctx.env);
  if (!record) {
    throw new CudaenvError(`cudaenv has not linked ${target}: there is nothing to restore`, {
      hint: 'cudaenv unlink undoes `cudaenv link` (which records what it replaces); check --target.',
      code: 'not-linked',
    });
  }
  const state = inspectTarget(target);
  const replaced = state.kind === 'symlink' ? `a link to ${state.value}` : state.kind;
  const previous: Previous = record.previous;
  if (previous.kind === 'alternatives') {
    guard(ctx, 'change the alternatives in', ctx.alt.altdir, () => accessSync(ctx.alt.altdir, constants.W_OK));
    const touched = touchedAlternatives(ctx.paths, target, ctx.env);
    const groups = new Map<string, {name: string; status: 'auto' | 'manual'; value: string | null}>();
    for (const g of previous.groups) groups.set(g.name, g);
    for (const t of touched) {
      const before = readRecord(ctx.paths, groupSubject(ctx.alt.altdir, t.group), ctx.env)?.previous;
      if (before?.kind === 'alternatives' && !groups.has(t.group)) groups.set(t.group, before.groups[0]);
    }
    const links: string[] = [];
    for (const g of groups.values()) {
      const now = queryGroup(ctx.alt, g.name);
      if (now) links.push(now.link);
      guard(ctx, 'change the alternatives group', g.name, () => restoreGroup(ctx.alt, g));
    }
    const removed: Array<{group: string; path: string}> = [];
    for (const t of touched.filter((x) => x.added)) {
      guard(ctx, 'change the alternatives group', t.group, () => removeAlternative(ctx.alt, t.group, t.path));
      removed.push({group: t.group, path: t.path});
    }
    for (const name of groups.keys()) forgetRecord(ctx.paths, groupSubject(ctx.alt.altdir, name), ctx.env);
    forgetRecord(ctx.paths, target, ctx.env);
    const restored = [...groups.values()].map((g) => `${g.name} in ${g.status} mode${g.status === 'manual' && g.value ? ` (${g.value})` : ''}`).join(', ');
    return {target, mode: 'alternatives', replaced, restored, removedAlternatives: removed, ldconfig: refreshLoaderCache(ctx.ld, links, 'run')};
  }
  if (state.kind === 'directory' || state.kind === 'file' || state.kind === 'other') {
    throw new CudaenvError(`${target} is now a ${state.kind}, not the link cudaenv made: leaving it alone`, {
      hint: `Move it away yourself if it should go; the recorded previous target was ${previous.kind === 'symlink' ? previous.value : 'nothing'}.`,
      code: 'target-not-link',
    });
  }
  guard(ctx, 'change', target, () => accessSync(dirname(target), constants.W_OK));
  let changed = true;
  if (previous.kind === 'symlink') {
    changed = !(state.kind === 'symlink' && state.value === previous.value);
    if (changed) guard(ctx, 'change', target, () => swapSymlink(target, previous.value));
  } else {
    changed = state.kind !== 'absent';
    guard(ctx, 'remove', target, () => removeSymlink(target));
  }
  forgetRecord(ctx.paths, target, ctx.env);
  return {
    target, mode: 'symlink', replaced,
    restored: previous.kind === 'symlink' ? `a link to ${previous.value}` : 'nothing (link removed)',
    removedAlternatives: [],
    ldconfig: refreshLoaderCache(ctx.ld, [target], changed ? 'run' : 'unchanged'),
  };
}
