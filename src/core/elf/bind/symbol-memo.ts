import type {LoadedObject, LoaderProcess} from '../search/loader-process.js';
import {buildDefinitions, defines, references, type Defs, type SymbolRef} from './symbols.js';
import type {ElfInfo} from '../read/elf/types.js';
import {lookedUpNames} from '../cache/file-cache.js';

/**
 * Remembers, per object and the set of objects its own dependencies bring, which references those
 * leave unbound: in a directory of libraries the same libc or libcublas appears in hundreds of
 * processes, and this makes each one cost a lookup.
 */
export class SymbolMemo {
  private ids = new WeakMap<ElfInfo, number>();
  private next = 0;
  private memo = new Map<string, SymbolRef[]>();
  private indexes = new WeakMap<ElfInfo, Map<string, Defs>>();
  /** The object a name was last found in: the first to ask for the next reference to it. */
  private lastDefiner = new Map<string, ElfInfo>();

  private wanted?: Set<string> | null;

  /**
   * @param wantedOf every name referenced in the processes this memo serves (null: index all);
   * asked for only when an object read with all its symbols must be indexed.
   */
  constructor(private readonly wantedOf: (() => Set<string>) | null = null) {}

  /** Does `info` define `ref`? Through an index of only the wanted names. */
  defines(info: ElfInfo, ref: SymbolRef): boolean {
    // Read with {symbols: 'undefined'}: the object's own hash table is the index.
    if (info.lookup) return defines(info, ref);
    let index = this.indexes.get(info);
    if (!index) {
      if (this.wanted === undefined) this.wanted = this.wantedOf ? this.wantedOf() : null;
      index = buildDefinitions(info, this.wanted ?? undefined);
      this.indexes.set(info, index);
    }
    return defines(info, ref, index);
  }

  id(info: ElfInfo): number {
    let id = this.ids.get(info);
    if (id === undefined) {
      id = this.next++;
      this.ids.set(info, id);
    }
    return id;
  }

  unboundWithin(obj: LoadedObject, closure: LoadedObject[]): SymbolRef[] {
    // A typed array sorts numbers natively (no comparator calls): this runs for every object of every process.
    const ids = new Int32Array(closure.length);
    for (let k = 0; k < closure.length; k++) ids[k] = this.id(closure[k].info);
    const key = `${this.id(obj.info)}|${ids.sort().join(',')}`;
    let unbound = this.memo.get(key);
    if (!unbound) {
      // The library a versioned reference names (vn_file) nearly always defines it: it is asked
      // first, which spares most lookups in the others (the answer does not depend on the order).
      const named = new Map<string, LoadedObject>();
      for (const o of closure) {
        for (const n of o.names) if (!named.has(n)) named.set(n, o);
        if (o.info.soname !== null && !named.has(o.info.soname)) named.set(o.info.soname, o);
      }
      // Unversioned references: the object that last defined the name is asked first when it is here.
      const present = new Map<ElfInfo, LoadedObject>();
      for (const o of closure) if (!present.has(o.info)) present.set(o.info, o);
      // The object itself is skipped: a name it references is not also one it defines.
      unbound = references(obj.info).filter((ref) => {
        let likely = ref.versionFile === null ? undefined : named.get(ref.versionFile);
        if (likely === undefined) {
          const last = this.lastDefiner.get(ref.name);
          likely = last === undefined ? undefined : present.get(last);
        }
        if (likely !== undefined && likely !== obj && this.defines(likely.info, ref)) return false;
        const definer = closure.find((o) => o !== obj && o !== likely && this.defines(o.info, ref));
        if (definer === undefined) return true;
        this.lastDefiner.set(ref.name, definer.info);
        return false;
      });
      // Only now, for the few objects with something unbound: is it looked up at all (a relocation)?
      if (unbound.length > 0) {
        const names = lookedUpNames(obj.info);
        if (names) unbound = unbound.filter((ref) => names.has(ref.name));
      }
      this.memo.set(key, unbound);
    }
    return unbound;
  }
}

/** Every symbol name the objects of these processes reference. */
export function referencedNames(processes: LoaderProcess[]): Set<string> {
  const names = new Set<string>();
  const seen = new Set<ElfInfo>();
  for (const p of processes) {
    for (const o of p.scope) {
      if (seen.has(o.info)) continue;
      seen.add(o.info);
      for (const r of references(o.info)) names.add(r.name);
    }
  }
  return names;
}
