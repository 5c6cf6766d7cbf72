import {dependencyList} from '../search/dependency-list.js';
import {tunableInEffect} from '../read/machine/tunables.js';
import type {DsoSortAlgorithm, LoaderPlatform} from '../read/machine/platform.js';
import type {LoadedObject, LoaderProcess} from '../search/loader-process.js';

/**
 * The order ld.so relocates a process's objects in, which decides the first error a real run
 * stops at (elf-loader-spec.md §1.1 step 6): the search list sorted so that every object comes
 * before its dependencies (`l_initfini`, elf/dl-sort-maps.c), walked backwards. rtld.c does that
 * at start-up; dl-open.c the same over the dlopened object's search list, skipping the objects
 * already relocated. ld.so itself is in the list and never relocated again: callers skip it.
 */
export function relocationOrder(p: LoaderProcess, tunables: string | undefined): LoadedObject[] {
  const algorithm = dsoSortAlgorithm(p.platform, tunables);
  const startup = p.scope.slice(0, p.startupScopeLength);
  const order = sortMaps(rootFirst(startup, p.main), algorithm, p.main).reverse();
  if (p.target !== p.main) {
    const done = new Set(startup);
    for (const o of sortMaps(rootFirst(searchList(p.target), p.target), algorithm, p.main).reverse()) if (!done.has(o)) order.push(o);
  }
  return order;
}

/**
 * The algorithm ld.so uses: glibc.rtld.dynamic_sort from GLIBC_TUNABLES when the loader has the
 * tunable (the last valid setting wins; values other than 1 and 2 are ignored), else its default.
 */
export function dsoSortAlgorithm(platform: LoaderPlatform, tunables: string | undefined): DsoSortAlgorithm {
  const chosen = platform.dsoSort.default;
  if (!platform.dsoSort.tunable) return chosen;
  const n = tunableInEffect(tunables, 'glibc.rtld.dynamic_sort', (v) => v === 1 || v === 2, platform.glibc);
  return n === 1 ? 'original' : n === 2 ? 'dfs' : chosen;
}

/**
 * _dl_map_object_deps's search list of `root` over the edges the resolver mapped: root, then breadth
 * first over DT_NEEDED edges, each filtee before the object that names it (./dependency-list.ts).
 */
export function searchList(root: LoadedObject): LoadedObject[] {
  return dependencyList([root], (o) => o.edges);
}

/**
 * The search list as dl-deps.c copies it into `l_initfini` before sorting: the object itself first,
 * then the filtees that were put before it ("map_index"), then the rest.
 */
function rootFirst(list: LoadedObject[], root: LoadedObject): LoadedObject[] {
  const at = list.indexOf(root);
  return at <= 0 ? list : [root, ...list.slice(0, at), ...list.slice(at + 1)];
}

/**
 * `l_initfini` of `maps[0]`: _dl_sort_maps(maps, n, force_first = true). Every other object's
 * dependencies are its DT_NEEDED and filtee edges in order (the l_initfini dl-deps.c gives it); maps[0]'s own
 * are still blank while it is being sorted, and the main program is never followed as a dependency.
 */
function sortMaps(maps: LoadedObject[], algorithm: DsoSortAlgorithm, main: LoadedObject): LoadedObject[] {
  const root = maps[0];
  const deps = (o: LoadedObject): LoadedObject[] => {
    if (o === root) return [];
    const out: LoadedObject[] = [];
    for (const e of o.edges) if (e.object) out.push(e.object);
    return out;
  };
  return algorithm === 'dfs' ? sortDfs(maps, deps, main) : sortOriginal(maps, deps);
}

/** _dl_sort_maps_dfs: reverse post-order of depth-first walks started from the last map back to the first. */
function sortDfs(maps: LoadedObject[], deps: (o: LoadedObject) => LoadedObject[], main: LoadedObject): LoadedObject[] {
  const inList = new Set(maps);
  const visited = new Set<LoadedObject>();
  const rpo: LoadedObject[] = [];
  // Recursion as in glibc; an explicit stack keeps a deep chain from exhausting Node's.
  const walk = (start: LoadedObject): void => {
    const stack: Array<{o: LoadedObject; deps: LoadedObject[]; next: number}> = [];
    visited.add(start);
    stack.push({o: start, deps: deps(start), next: 0});
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.next < top.deps.length) {
        const d = top.deps[top.next++];
        // Only objects of this list are sorted (dl-deps.c passes the whole search list).
        if (!visited.has(d) && d !== main && inList.has(d)) {
          visited.add(d);
          stack.push({o: d, deps: deps(d), next: 0});
        }
        continue;
      }
      stack.pop();
      rpo.push(top.o);
    }
  };
  for (let i = maps.length - 1; i >= 0 && visited.size < maps.length; i--) {
    if (!visited.has(maps[i])) walk(maps[i]);
  }
  // rpo holds post-order; the sorted list is its reverse.
  const sorted = rpo.reverse();
  // force_first: the first object goes back to the front if a cycle moved it.
  const at = sorted.indexOf(maps[0]);
  if (at > 0) {
    sorted.splice(at, 1);
    sorted.unshift(maps[0]);
  }
  return sorted;
}

/**
 * _dl_sort_maps_original (the only one before glibc 2.35): each object is moved behind the last
 * later object that depends on it; `seen` counts stop a cycle from moving objects forever.
 */
function sortOriginal(all: LoadedObject[], deps: (o: LoadedObject) => LoadedObject[]): LoadedObject[] {
  // force_first: maps[0] stays first and is not sorted.
  const maps = all.slice(1);
  const n = maps.length;
  if (n <= 1) return all.slice();
  const depsOf = new Map(maps.map((o) => [o, deps(o)]));
  const seen = new Array<number>(n).fill(0);
  let i = 0;
  for (;;) {
    ++seen[i];
    const thisp = maps[i];
    let moved = false;
    for (let k = n - 1; k > i; k--) {
      if (!depsOf.get(maps[k])!.includes(thisp)) continue;
      // Move the current object to the back, past the last object that has it as a dependency.
      maps.splice(i, 1);
      maps.splice(k, 0, thisp);
      if (seen[i + 1] > n - i) {
        ++i;
        seen.fill(0, i);
      } else {
        const thisSeen = seen[i];
        seen.splice(i, 1);
        seen.splice(k, 0, thisSeen);
      }
      moved = true;
      break;
    }
    if (moved) continue;
    if (++i === n) break;
    seen.fill(0, i);
  }
  return [all[0], ...maps];
}
