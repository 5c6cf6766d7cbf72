import type {Finding} from './finding.js';
import type {SymbolMemo} from './symbol-memo.js';
import {lookedUpNames} from '../cache/file-cache.js';
import type {LoadedObject, LoaderProcess} from '../search/loader-process.js';
import {references, type SymbolRef} from './symbols.js';

/**
 * Before glibc 2.41, check_match (dl-lookup.c) asserts when a versioned lookup reaches the object
 * its version names (vn_file) and that object has no DT_VERSYM (a library rebuilt without symbol
 * versioning) yet defines the name: `Assertion version->filename == NULL || !
 * _dl_name_match_p (version->filename, map)' failed, unless an object earlier in the scope defines
 * it first. `scope`: the objects the lookup walks, in order (with --exe, the program's start alone
 * for a copy relocation). The referencing object is passed over: it defines none of its own
 * references, and a program's copy relocation skips the program.
 */
export function checkMatchAbort(p: LoaderProcess, obj: LoadedObject, ref: SymbolRef, memo: SymbolMemo, glibc: [number, number], scope: readonly LoadedObject[] = p.scope): Finding | null {
  if (ref.version === null || ref.versionFile === null) return null;
  const named = p.objectMatching(ref.versionFile);
  if (!named || named === obj || named.info.hasVersym || named.role === 'interp' || !memo.defines(named.info, ref)) return null;
  const at = scope.indexOf(named);
  if (at < 0 || scope.slice(0, at).some((o) => o !== obj && memo.defines(o.info, ref))) return null;
  return {
    kind: 'loader-abort', object: obj, library: ref.versionFile, version: ref.version, symbol: ref.name, provider: named, edge: p.edgeTo(named) ?? null, ref,
    reason: `check_match: Assertion \`version->filename == NULL || ! _dl_name_match_p (version->filename, map)' failed: ${obj.path} asks for ${ref.name}@${ref.version} and ${named.path}, the ${ref.versionFile} it names, defines it without any symbol versioning (glibc ${glibc.join('.')} aborts; 2.41 and later accept it)`,
  };
}

/** The check_match assertions relocating `obj` would hit (glibc < 2.41; see find-problems.ts). */
export function checkMatchAborts(p: LoaderProcess, obj: LoadedObject, memo: SymbolMemo, glibc: [number, number]): Finding[] {
  const out: Finding[] = [];
  const unversioned = unversionedNames(p);
  for (const ref of references(obj.info)) {
    // Only a version naming an object without DT_VERSYM can meet the assertion: the others are
    // passed over without a search of the process's objects by name (every reference of every
    // object, in each process of a check where one object lacks versioning).
    if (ref.versionFile === null || !unversioned.has(ref.versionFile)) continue;
    const abort = checkMatchAbort(p, obj, ref, memo, glibc);
    if (abort && (lookedUpNames(obj.info)?.has(ref.name) ?? true)) out.push(abort);
  }
  return out;
}

const namesWithoutVersym = new WeakMap<LoaderProcess, {objects: number; names: Set<string>}>();

/** Every name (path, names loaded under, SONAME) of `p`'s objects without DT_VERSYM: what objectMatching could answer with one. */
function unversionedNames(p: LoaderProcess): Set<string> {
  // Objects are added, and names to them, while a process loads: the answer is kept for as many.
  let count = p.objects.length;
  for (const o of p.objects) count += o.names.length;
  const known = namesWithoutVersym.get(p);
  if (known && known.objects === count) return known.names;
  const names = new Set<string>();
  for (const o of p.objects) {
    if (o.info.hasVersym) continue;
    names.add(o.path);
    for (const n of o.names) names.add(n);
  }
  namesWithoutVersym.set(p, {objects: count, names});
  return names;
}
