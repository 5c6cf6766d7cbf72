import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine, type CheckReport} from '../../../src/core/elf/index.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {describeIf} from '../../helpers/skip.js';
import {rng} from './fuzz/generate.js';
import {buildDlopenDriver} from './fixtures.js';
import {buildGraphs, graphScript, lib, randomNeeds, relocationLines, runLoaders, SORTERS, SORTERS_SKIP_REASON, SORTERS_USABLE} from './fuzz/sorter-graphs.js';

/**
 * The order ld.so relocates objects in decides which error a real run stops at (issue 12, item
 * 10: the headline names the problem the loader hits first). Seeded random graphs, cycles
 * included (two libraries that need each other are legal and common in plugin trees), every
 * object with a symbol nothing defines: the real loader reports them in its relocation order
 * (`ldd -r`'s listing) and stops at the first (a dlopen with RTLD_NOW). Each graph runs under
 * both of glibc's dependency sorters (GLIBC_TUNABLES=glibc.rtld.dynamic_sort=1 and 2), and the
 * model must give the same order and the same first error in each.
 */
const GRAPHS = 40;

interface Graph {
  seed: number;
  dir: string;
  needs: number[][];
}

let tmp: {dir: string; cleanup: () => void};
let driver: string;
const graphs: Graph[] = [];

function makeGraph(seed: number, dir: string): Graph {
  const random = rng(seed);
  return {seed, dir, needs: randomNeeds(random, () => Math.floor(random() * 3))};
}

const buildScript = (g: Graph): string => graphScript(g.dir, g.needs);

interface Real {
  /** The objects of `undefined symbol` lines, in the order ld.so printed them. */
  order: string[];
  /** The symbol a dlopen(RTLD_NOW) stopped at. */
  firstDlopen: string | null;
}

function askLoader(g: Graph, sorter: string): Real {
  const {trace, dlopen} = runLoaders(g.dir, sorter, driver);
  return {order: relocationLines(trace.out), firstDlopen: /undefined symbol: (miss_\d+)/.exec(dlopen.out)?.[1] ?? null};
}

const modelOrder = (r: CheckReport) => r.problems.filter((p) => p.symbol?.startsWith('miss_')).map((p) => p.object.split('/').pop()!);

describeIf(SORTERS_USABLE, SORTERS_SKIP_REASON)('relocation order: the first error is the loader\'s', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-order-');
    driver = buildDlopenDriver(join(tmp.dir, 'dlopen-driver'));
    graphs.push(...buildGraphs(tmp.dir, GRAPHS, 7_000, makeGraph, buildScript));
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
