import type {Finding} from './finding.js';
import type {SymbolMemo} from './symbol-memo.js';
import {lookedUpNames} from '../cache/file-cache.js';
import {versionAtMost} from '../read/ldcache/host-loader.js';
import type {LoadedObject, LoaderProcess} from '../search/loader-process.js';
import {versionedReferences, type SymbolRef} from './symbols.js';

/**
 * glibc before 2.30 (RHEL 8's 2.28, Ubuntu 18.04's 2.27): a versioned lookup that reaches, in scope
 * order, the object its version names (vn_file, matched as _dl_name_match_p matches) before any
 * object defines the symbol stops there: do_lookup_x returns -1 and _dl_lookup_symbol_x signals
 * "symbol S version V not defined in file F with link time reference", although a later object
 * defines S at V, and for a weak reference too. An object without a hash table is passed over
 * before the test. glibc 2.30 lets the search go on (commit f0b2132b35, "Support moving versioned
 * symbols between sonames"); elf-loader-spec.md §4.5 and its table of releases.
 */
export function stopsAtVersionFile(glibc: [number, number] | null): boolean {
  return glibc !== null && versionAtMost(glibc, 2, 29);
}

export interface VersionFileStop {
  /** The object the version names, where the lookup stops. */
  named: LoadedObject;
  /** The first object after it that defines the symbol at that version: what 2.30 and later bind (null: none). */
  later: LoadedObject | null;
}

/**
 * Where a lookup of `ref` over `scope` stops under those releases, or null when an object defines
 * it before the one its version names (or the lookup never meets that one). `skip`: an object the
 * lookup passes over (a program looking up the definition of its own copy relocation).
 */
export function versionFileStop(
  scope: readonly LoadedObject[], ref: SymbolRef, memo: SymbolMemo, skip: LoadedObject | null = null,
  firstNamed: Map<string, number> = new Map(),
): VersionFileStop | null {
  const file = ref.versionFile;
  if (ref.version === null || file === null) return null;
  // An object references hundreds of symbols of the same few libraries: each name is found once per scope.
  let at = firstNamed.get(file);
  if (at === undefined) {
    at = scope.findIndex((o) => o !== skip && o.info.hashTable !== 'none' && (o.path === file || o.names.includes(file)));
    firstNamed.set(file, at);
  }
  if (at < 0) return null;
  const named = scope[at];
  // Nearly always the named library defines it: one lookup settles that nothing stops.
  if (memo.defines(named.info, ref)) return null;
  for (let i = 0; i < at; i++) {
    const o = scope[i];
    if (o !== skip && memo.defines(o.info, ref)) return null;
  }
  const later = scope.slice(at + 1).find((o) => o !== skip && memo.defines(o.info, ref)) ?? null;
  return {named, later};
}

const STB_WEAK = 2;

/**
 * The references of `obj` such a release stops at that the binding pass does not report: ones a
 * later object defines (bound from 2.30 on), and weak ones (unbound is no failure from 2.30 on). A
 * strong reference nothing defines is the binding pass's undefined symbol already, with the same
 * message from ld.so. `scopeFor(name)`: the objects a lookup of that name walks, in order.
 */
export function versionFileStops(p: LoaderProcess, obj: LoadedObject, memo: SymbolMemo, scopeFor: (name: string) => readonly LoadedObject[]): Finding[] {
  const out: Finding[] = [];
  const firstNamed = new Map<readonly LoadedObject[], Map<string, number>>();
  for (const ref of versionedReferences(obj.info)) {
    const scope = scopeFor(ref.name);
    let named = firstNamed.get(scope);
    if (!named) firstNamed.set(scope, named = new Map());
    const stop = versionFileStop(scope, ref, memo, null, named);
    if (!stop) continue;
    const weak = ref.binding === STB_WEAK;
    if (!weak && stop.later === null) continue;
    // Only what a relocation names is looked up (read now: such a stop is rare).
    if (!(lookedUpNames(obj.info)?.has(ref.name) ?? true)) continue;
    out.push({
      kind: 'undefined-symbol', object: obj, library: ref.versionFile, version: ref.version, symbol: ref.name,
      provider: stop.named, edge: p.edgeTo(stop.named) ?? null, ref, versionFileStop: {later: stop.later, weak},
    });
  }
  return out;
}
