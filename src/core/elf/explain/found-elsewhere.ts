import {realpathSync} from 'node:fs';
import {basename} from 'node:path';
import type {CheckedObject, NeededEdge, Problem} from '../report-types.js';
import {isInside, normalRoot, realpathIn} from '../read/machine/sysroot.js';
import type {ReportFacts} from '../cache/report-memo.js';

/** What one checked file's process gave: its root and every object it loaded. */
interface ProcessResult {
  checked?: string;
  objects: CheckedObject[];
  problems: Problem[];
}

/** Another checked file whose process loads the object and finds the library. */
interface FoundBy {
  root: string;
  object: string;
  edge: NeededEdge;
}

/**
 * A library that cannot find a dependency when it is loaded on its own is often loaded only by
 * the objects it ships with: a Python wheel's vendored `scipy.libs/libgfortran-….so` needs
 * `libquadmath-….so` beside it and has no RPATH, and the extension modules that load it find that
 * library for it through their own DT_RPATH (which the loader also searches for their
 * dependencies' dependencies), or have loaded it already. Checking a package tree, each file is
 * still its own process, as `ldd -r` runs it, and such a library still fails on its own; but where
 * another checked file's process loads it and finds the library, its problems (the not-found and
 * the symbols that would have come from there) say so and give the advice for both ways of loading
 * it, instead of only "add its directory to LD_LIBRARY_PATH". Returns the results with new problem
 * objects where one changed (the verdict cache keeps what each file's own process gave). `sysroot`:
 * the system image checked (CUDAENV_SYSROOT), whose links are followed inside it; `facts`, when a
 * report is to be kept, records each path resolved.
 */
export function noteFoundElsewhere<R extends ProcessResult>(results: R[], sysroot = '', facts?: ReportFacts): R[] {
  const root = normalRoot(sysroot);
  // Only the libraries a checked file itself does not find are asked about below: nearly every
  // check has none, and then nothing is indexed; otherwise only edges of those names are (a cached
  // check of a whole Python environment otherwise indexed every edge of every object).
  const wanted = new Set<string>();
  for (const r of results) for (const p of r.problems) if (p.kind === 'not-found' && p.library !== null && p.object === r.checked) wanted.add(p.library);
  if (wanted.size === 0) return results;
  // (file name, library) -> the other processes that load such a file, and whether they find it:
  // names first, files compared only then (one file is reached under several paths, ../ included).
  const loads = new Map<string, Array<FoundBy | {root: string; object: string; edge: null}>>();
  for (const r of results) {
    if (r.checked === undefined) continue;
    for (const o of r.objects) {
      if (o.path === r.checked) continue;
      for (const edge of o.needed) {
        if (edge.reached === false || !wanted.has(edge.name)) continue;
        const key = `${basename(o.path)}\0${edge.name}`;
        const list = loads.get(key) ?? [];
        list.push(edge.path !== null && edge.rule !== null ? {root: r.checked, object: o.path, edge} : {root: r.checked, object: o.path, edge: null});
        loads.set(key, list);
      }
    }
  }
  if (loads.size === 0) return results;
  const real = new Map<string, string | null>();
  const file = (path: string): string | null => {
    if (!real.has(path)) {
      try {
        // In an image an absolute link points into the image, not at the host's file of that name.
        const inside = isInside(root, path);
        real.set(path, facts ? (inside ? facts.realpathIn(path) ?? null : facts.realpath(path)) : inside ? realpathIn(root, path) ?? null : realpathSync.native(path));
      } catch {
        real.set(path, null);
      }
    }
    return real.get(path)!;
  };
  /** The first other process that finds it, when every other process that loads the object does. */
  const foundBy = (object: string, library: string, root: string): FoundBy | undefined => {
    const self = file(object);
    if (self === null) return undefined;
    const others = (loads.get(`${basename(object)}\0${library}`) ?? []).filter((l) => l.root !== root && file(l.object) === self);
    if (others.some((l) => l.edge === null)) return undefined; // another file that loads it fails too: that failure is real
    return others[0] as FoundBy | undefined;
  };
  return results.map((r) => {
    // Only the object's own process (it is the file checked), and only what the library not being
    // found causes there: the not-found itself and the symbols it would have defined.
    const missing = new Set(r.problems.filter((p) => p.kind === 'not-found' && p.library !== null && p.object === r.checked).map((p) => p.library!));
    if (missing.size === 0) return r;
    const by = new Map([...missing].map((library) => [library, foundBy(r.checked!, library, r.checked!)] as const));
    let changed = false;
    const problems = r.problems.map((p) => {
      if (p.object !== r.checked || p.library === null || (p.kind !== 'not-found' && p.kind !== 'undefined-symbol')) return p;
      const f = by.get(p.library);
      if (f === undefined) return p;
      changed = true;
      return amend(p, f);
    });
    return changed ? {...r, problems} : r;
  });
}

function amend(p: Problem, by: FoundBy): Problem {
  const name = basename(p.object);
  const how = `${by.root} loads it and finds ${p.library} as ${by.edge.path} (${by.edge.rule})`;
  if (p.kind === 'not-found') {
    return {
      ...p,
      explanation: `${p.explanation} Loaded the way another checked file loads it, it does find it: ${how}. If only such files load ${name} (a library vendored for them), this is harmless; a program that loads ${name} by itself fails as described.`,
      fix: `nothing, if only the files it ships with load ${name} (${basename(by.root)} does); for a program that loads it by itself: ${p.fix ?? 'make the library findable'}`,
      summary: `${p.summary} when it is loaded on its own (loaded by ${basename(by.root)}, it is found)`,
      foundWhenLoadedBy: {object: by.root, path: by.edge.path!, rule: by.edge.rule!},
    };
  }
  return {
    ...p,
    explanation: `${p.explanation} (Only when ${name} is loaded on its own: ${how}.)`,
    foundWhenLoadedBy: {object: by.root, path: by.edge.path!, rule: by.edge.rule!},
  };
}
