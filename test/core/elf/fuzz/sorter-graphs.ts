import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {haveCommand, HAVE_GCC} from '../fixtures.js';

/**
 * What the relocation-order tests (loader-order, loader-filters) share: seeded graphs of one-function
 * objects, each calling a symbol nothing defines (`miss_<i>`), so that the real loader names every
 * object in the order it relocates them, under both of glibc's dependency sorters.
 */
export const RTLD = '/lib64/ld-linux-x86-64.so.2';
export const SORTERS = ['1', '2'] as const;
/** Only a loader with both sorters can be asked about both (glibc 2.35 and later, or a backport). */
export const SORTERS_USABLE = process.arch === 'x64' && HAVE_GCC && haveCommand('as') && haveCommand('ld') && existsSync(RTLD) &&
  spawnSync(RTLD, ['--list-tunables'], {encoding: 'utf8'}).stdout?.includes('glibc.rtld.dynamic_sort') === true;
export const SORTERS_SKIP_REASON = `needs x86-64 with gcc, as, ld and a ${RTLD} with glibc.rtld.dynamic_sort (glibc 2.35 or later)`;

export const lib = (i: number) => `libo${i}.so`;

/** Objects 1..n-1 hang off a random tree rooted at 0; extra edges go anywhere but to 0, back edges (cycles) included. */
export function randomNeeds(random: () => number, extraEdges: () => number): number[][] {
  const n = 3 + Math.floor(random() * 5);
  const needs: number[][] = Array.from({length: n}, () => []);
  for (let i = 1; i < n; i++) needs[Math.floor(random() * i)].push(i);
  for (let i = 0; i < n; i++) {
    const extra = extraEdges();
    for (let k = 0; k < extra; k++) {
      const j = 1 + Math.floor(random() * (n - 1));
      if (j !== i && !needs[i].includes(j)) needs[i].splice(Math.floor(random() * (needs[i].length + 1)), 0, j);
    }
  }
  return needs;
}

/**
 * The shell lines that build a graph in `dir`: stubs first (so that any edge, cycles too, can be
 * linked), then each object linked with `flags(i)` and its DT_NEEDED list in order.
 */
export function graphScript(dir: string, needs: number[][], flags: (i: number) => string = () => ''): string {
  const lines = [`mkdir -p '${dir}' && cd '${dir}'`];
  needs.forEach((_, i) => {
    writeFileSync(join(dir, `o${i}.s`), `\t.text\n\t.globl o${i}\n\t.type o${i},@function\no${i}:\n\tcall miss_${i}@PLT\n\tret\n`);
    lines.push(`as -o o${i}.o o${i}.s && ld -shared -soname ${lib(i)} -o ${lib(i)} o${i}.o`);
  });
  needs.forEach((deps, i) => lines.push(`ld -shared -soname ${lib(i)} -o ${lib(i)}.new o${i}.o ${flags(i)} --no-as-needed ${deps.map(lib).join(' ')} && mv ${lib(i)}.new ${lib(i)}`));
  return lines.join('\n');
}

/** Makes `count` graphs (seeds from `firstSeed`) under `root`, builds them all in one shell, and returns them. */
export function buildGraphs<G extends {dir: string}>(root: string, count: number, firstSeed: number, make: (seed: number, dir: string) => G, script: (g: G) => string): G[] {
  const graphs: G[] = [];
  for (let i = 0; i < count; i++) {
    const g = make(firstSeed + i, join(root, `g${i}`));
    mkdirSync(g.dir, {recursive: true});
    graphs.push(g);
  }
  const built = spawnSync('sh', ['-ec', graphs.map(script).join('\n')], {encoding: 'utf8'});
  if (built.status !== 0) throw new Error(`building the graphs failed:\n${built.stderr}`);
  return graphs;
}

/** What the real loader does with `dir`'s libo0.so under one sorter: `ldd -r`'s trace and a dlopen(RTLD_NOW) by `driver`. */
export function runLoaders(dir: string, sorter: string, driver: string, timeout?: number): {
  trace: {out: string; signal: NodeJS.Signals | null};
  dlopen: {out: string; signal: NodeJS.Signals | null};
} {
  const env = {PATH: process.env.PATH, LD_LIBRARY_PATH: dir, GLIBC_TUNABLES: `glibc.rtld.dynamic_sort=${sorter}`};
  const trace = spawnSync(RTLD, [join(dir, lib(0))], {encoding: 'utf8', timeout, env: {...env, LD_TRACE_LOADED_OBJECTS: '1', LD_BIND_NOW: '1', LD_WARN: 'yes'}});
  const dl = spawnSync(driver, [join(dir, lib(0))], {encoding: 'utf8', timeout, env});
  return {trace: {out: `${trace.stdout}${trace.stderr}`, signal: trace.signal}, dlopen: {out: dl.stdout, signal: dl.signal}};
}

/** The objects of `undefined symbol: miss_N` lines, in the order ld.so printed them. */
export const relocationLines = (out: string): string[] => [...out.matchAll(/undefined symbol: miss_(\d+)/g)].map((m) => lib(Number(m[1])));
