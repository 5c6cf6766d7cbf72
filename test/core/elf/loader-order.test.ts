import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine, type CheckReport} from '../../../src/core/elf/index.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {describeIf} from '../../helpers/skip.js';
import {rng} from './fuzz/generate.js';
import {buildDlopenDriver, haveCommand, HAVE_GCC} from './fixtures.js';

/**
 * The order ld.so relocates objects in decides which error a real run stops at (issue 12, item
 * 10: the headline names the problem the loader hits first). Seeded random graphs, cycles
 * included (two libraries that need each other are legal and common in plugin trees), every
 * object with a symbol nothing defines: the real loader reports them in its relocation order
 * (`ldd -r`'s listing) and stops at the first (a dlopen with RTLD_NOW). Each graph runs under
 * both of glibc's dependency sorters (GLIBC_TUNABLES=glibc.rtld.dynamic_sort=1 and 2), and the
 * model must give the same order and the same first error in each.
 */
const RTLD = '/lib64/ld-linux-x86-64.so.2';
const usable = process.arch === 'x64' && HAVE_GCC && haveCommand('as') && haveCommand('ld') && existsSync(RTLD) &&
  // Only a loader with both sorters can be asked about both (glibc 2.35 and later, or a backport).
  spawnSync(RTLD, ['--list-tunables'], {encoding: 'utf8'}).stdout?.includes('glibc.rtld.dynamic_sort') === true;
const GRAPHS = 40;
const SORTERS = ['1', '2'] as const;

interface Graph {
  seed: number;
  dir: string;
  needs: number[][];
}

let tmp: {dir: string; cleanup: () => void};
let driver: string;
const graphs: Graph[] = [];

/** Objects 1..n-1 hang off a random tree rooted at 0; extra edges go anywhere but to 0, back edges (cycles) included. */
function makeGraph(seed: number, dir: string): Graph {
  const random = rng(seed);
  const n = 3 + Math.floor(random() * 5);
  const needs: number[][] = Array.from({length: n}, () => []);
  for (let i = 1; i < n; i++) needs[Math.floor(random() * i)].push(i);
  for (let i = 0; i < n; i++) {
    const extra = Math.floor(random() * 3);
    for (let k = 0; k < extra; k++) {
      const j = 1 + Math.floor(random() * (n - 1));
      if (j !== i && !needs[i].includes(j)) needs[i].splice(Math.floor(random() * (needs[i].length + 1)), 0, j);
    }
  }
  return {seed, dir, needs};
}

const lib = (i: number) => `libo${i}.so`;

/** Stubs first, then every object linked against its DT_NEEDED list in order: any edge, cycles too. */
function buildScript(g: Graph): string {
  const lines = [`mkdir -p '${g.dir}' && cd '${g.dir}'`];
  g.needs.forEach((_, i) => {
    writeFileSync(join(g.dir, `o${i}.s`), `\t.text\n\t.globl o${i}\n\t.type o${i},@function\no${i}:\n\tcall miss_${i}@PLT\n\tret\n`);
    lines.push(`as -o o${i}.o o${i}.s && ld -shared -soname ${lib(i)} -o ${lib(i)} o${i}.o`);
  });
  g.needs.forEach((deps, i) => lines.push(`ld -shared -soname ${lib(i)} -o ${lib(i)}.new o${i}.o --no-as-needed ${deps.map(lib).join(' ')} && mv ${lib(i)}.new ${lib(i)}`));
  return lines.join('\n');
}

interface Real {
  /** The objects of `undefined symbol` lines, in the order ld.so printed them. */
  order: string[];
  /** The symbol a dlopen(RTLD_NOW) stopped at. */
  firstDlopen: string | null;
}

function askLoader(g: Graph, sorter: string): Real {
  const env = {PATH: process.env.PATH, LD_LIBRARY_PATH: g.dir, GLIBC_TUNABLES: `glibc.rtld.dynamic_sort=${sorter}`};
  const trace = spawnSync(RTLD, [join(g.dir, lib(0))], {encoding: 'utf8', env: {...env, LD_TRACE_LOADED_OBJECTS: '1', LD_BIND_NOW: '1', LD_WARN: 'yes'}});
  const order = [...`${trace.stdout}${trace.stderr}`.matchAll(/undefined symbol: miss_(\d+)/g)].map((m) => lib(Number(m[1])));
  const dl = spawnSync(driver, [join(g.dir, lib(0))], {encoding: 'utf8', env});
  return {order, firstDlopen: /undefined symbol: (miss_\d+)/.exec(dl.stdout)?.[1] ?? null};
}

const modelOrder = (r: CheckReport) => r.problems.filter((p) => p.symbol?.startsWith('miss_')).map((p) => p.object.split('/').pop()!);

describeIf(usable, `needs x86-64 with gcc, as, ld and a ${RTLD} with glibc.rtld.dynamic_sort (glibc 2.35 or later)`)('relocation order: the first error is the loader\'s', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-order-');
    driver = buildDlopenDriver(join(tmp.dir, 'dlopen-driver'));
    for (let i = 0; i < GRAPHS; i++) {
      const g = makeGraph(7_000 + i, join(tmp.dir, `g${i}`));
      mkdirSync(g.dir, {recursive: true});
      graphs.push(g);
    }
    const built = spawnSync('sh', ['-ec', graphs.map(buildScript).join('\n')], {encoding: 'utf8'});
    if (built.status !== 0) throw new Error(`building the graphs failed:\n${built.stderr}`);
  }, 120_000);
  afterAll(() => tmp?.cleanup());

  test('ldd -r order and dlopen\'s first error, under both sorters, for every graph', async () => {
    const failures: string[] = [];
    let sortersDiffer = 0;
    for (const g of graphs) {
      const seen: Record<string, string[]> = {};
      for (const sorter of SORTERS) {
        const real = askLoader(g, sorter);
        seen[sorter] = real.order;
        const options = {targets: [join(g.dir, lib(0))], ldLibraryPath: g.dir, glibcTunables: `glibc.rtld.dynamic_sort=${sorter}`};
        const asMain = modelOrder(await checkLibraries(options));
        const dlopened = await checkLibraries({...options, exe: driver, strict: true});
        const first = dlopened.problems.find((p) => p.symbol?.startsWith('miss_'))?.symbol ?? null;
        if (JSON.stringify(asMain) !== JSON.stringify(real.order) || first !== real.firstDlopen) {
          failures.push(`graph ${g.seed} (needs ${JSON.stringify(g.needs)}), dynamic_sort=${sorter}: ld.so ${JSON.stringify(real.order)} then dlopen stops at ${real.firstDlopen}; model ${JSON.stringify(asMain)}, first ${first}`);
        }
        // Every object has its own missing symbol, so every one is listed.
        expect(real.order.length).toBe(g.needs.length);
      }
      if (JSON.stringify(seen['1']) !== JSON.stringify(seen['2'])) sortersDiffer++;
    }
    expect(failures).toEqual([]);
    // The graphs must include ones where the two sorters disagree, or the test could not tell them apart.
    expect(sortersDiffer).toBeGreaterThan(2);
  }, 120_000);

  test('the headline is the first failure of the run, not the last object loaded', async () => {
    // libL needs libA and libB; libB needs libA: ld.so relocates libA before libB, whatever their load order.
    const dir = join(tmp.dir, 'headline');
    mkdirSync(dir, {recursive: true});
    const g: Graph = {seed: 0, dir, needs: [[1, 2], [], [1]]};
    const built = spawnSync('sh', ['-ec', buildScript(g)], {encoding: 'utf8'});
    expect(built.stderr).toBe('');
    const real = askLoader(g, '2');
    expect(real.order).toEqual([lib(1), lib(2), lib(0)]);
    const report = await checkLibraries({targets: [join(dir, lib(0))], ldLibraryPath: dir, strict: true});
    expect(firstProblemLine(report, {strict: true})).toContain(`${lib(1)} needs symbol miss_1`);
  });
});
