/** How an object names a dependency: DT_NEEDED, DT_FILTER or DT_AUXILIARY. */
export type DependencyKind = 'needed' | 'filter' | 'auxiliary';

/** One dependency as the list walk sees it: null when nothing was loaded for it. */
export interface DependencyLink<T> {
  kind: DependencyKind;
  object: T | null;
}

/**
 * The search list _dl_map_object_deps (elf/dl-deps.c) builds from `start`: every object's
 * DT_NEEDED objects are appended at the tail (breadth first), while a DT_FILTER or DT_AUXILIARY
 * object (a filtee) goes just before the object that names it, so that its definitions are found
 * first. A filtee already earlier in the list stays where it is; one further on is moved up. The
 * entry a filtee takes is processed next, so its own dependencies are loaded before those of the
 * rest of the list, and an object moved up is processed again, as dl-deps.c's `done` marks do.
 *
 * `dependencies(o)` is called each time an entry of `o` is processed, in ld.so's order (that is
 * when a loader maps what `o` needs); it gives `o`'s dependencies in dynamic-array order.
 */
export function dependencyList<T>(start: readonly T[], dependencies: (o: T) => ReadonlyArray<DependencyLink<T>>): T[] {
  return walkDependencies(start, dependencies).list;
}

/**
 * dependencyList, and whether the walk ends at all. Filtees that name each other (A filters
 * through B, B through A) move each other up for ever: ld.so keeps going until its stack is gone
 * and dies of SIGSEGV (`ldd` as well). Then `loop` holds the objects processed over and over,
 * in the order they were last processed, and `list` the list as it stood. `dependencies` may
 * answer null to stop the walk as endless. `placed(filtee, before)` is told each time a filtee is
 * put before an object (dl-deps.c also links it before that object in the list of loaded objects).
 */
export function walkDependencies<T>(
  start: readonly T[], dependencies: (o: T) => ReadonlyArray<DependencyLink<T>> | null, placed?: (filtee: T, before: T) => void,
): {list: T[]; loop: T[] | null} {
  const list: T[] = [...start];
  const listed = new Set<T>(start);
  // Until a filtee moves an entry, entries are processed once each, in list order: how many times
  // each was processed, and which are done, are kept only from then on (most walks have no filtee).
  let done = null as boolean[] | null;
  let times = null as Map<T, number> | null;
  let i = 0;
  while (i < list.length) {
    if (done !== null && times !== null) {
      done[i] = true;
      const count = (times.get(list[i]) ?? 0) + 1;
      times.set(list[i], count);
      // Without such a cycle an object is moved up (and processed again) far fewer times than this.
      if (count > list.length + 2) return {list, loop: [...times].filter(([, n]) => n > 2).map(([o]) => o)};
    }
    const deps = dependencies(list[i]);
    // The caller saw it go on without end another way (copies of one library loaded over and over).
    if (deps === null) return {list, loop: times ? [...times].filter(([, n]) => n > 1).map(([o]) => o) : []};
    // Where the processed object sits now: each filtee is inserted here, pushing it one further.
    let at = i;
    for (const dep of deps) {
      const o = dep.object;
      if (o === null) continue;
      if (dep.kind === 'needed') {
        if (!listed.has(o)) {
          listed.add(o);
          list.push(o);
          done?.push(false);
        }
        continue;
      }
      if (done === null || times === null) {
        // The first filtee: entries 0..i were processed once each, in order.
        done = list.map((_, j) => j <= i);
        times = new Map(list.slice(0, i + 1).map((e) => [e, 1]));
      }
      if (listed.has(o)) {
        const where = list.indexOf(o);
        // Before the object (or the object itself): already found early enough.
        if (where <= at) continue;
        list.splice(where, 1);
        done.splice(where, 1);
      } else {
        listed.add(o);
      }
      list.splice(at, 0, o);
      done.splice(at, 0, false);
      at++;
      placed?.(o, list[at]);
    }
    if (done === null) i++;
    else while (i < list.length && done[i]) i++;
  }
  return {list, loop: null};
}
