import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine, type CheckReport} from '../../../src/core/elf/index.js';
import {formatTree} from '../../../src/core/elf/explain/format-report.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {describeIf} from '../../helpers/skip.js';
import {rng} from './fuzz/generate.js';
import {buildDlopenDriver} from './fixtures.js';
import {buildGraphs, graphScript, lib, randomNeeds, relocationLines, RTLD, runLoaders, SORTERS, SORTERS_SKIP_REASON, SORTERS_USABLE} from './fuzz/sorter-graphs.js';

/**
 * DT_FILTER and DT_AUXILIARY (`ld -F`, `ld -f`): ld.so loads the named object like a DT_NEEDED
 * one, but puts it just before the filtering object in the search list (moving it up if it is
 * further on), processes it next, fails without a DT_FILTER object and goes on without a
 * DT_AUXILIARY one (elf/dl-deps.c). Seeded random graphs with cycles, filters and auxiliary
 * objects (present, already needed elsewhere, or missing), each asked of the real loader under
 * both dependency sorters: `ldd -r`'s relocation order, the libraries it cannot find, and the
 * first error of a dlopen(RTLD_NOW); the model must agree on all three.
 */
const GRAPHS = 40;

interface Graph {
  seed: number;
  dir: string;
  needs: number[][];
  /** Per object: the DT_FILTER / DT_AUXILIARY name, or null (ld keeps one of each). */
  filter: Array<string | null>;
  auxiliary: Array<string | null>;
}

let tmp: {dir: string; cleanup: () => void};
let driver: string;
const graphs: Graph[] = [];

function makeGraph(seed: number, dir: string): Graph {
  const random = rng(seed);
  const needs = randomNeeds(random, () => (random() < 0.5 ? 1 : 0));
  const n = needs.length;
  // A filtee: another object of the graph (one loaded anyway, earlier or later, or only through
  // this entry) or a name nothing provides.
  const pick = (i: number, missing: number): string | null => {
    if (random() < missing) return `libmissing${i}.so`;
    const j = 1 + Math.floor(random() * (n - 1));
    return j === i ? null : lib(j);
  };
  const filter = needs.map((_, i) => (random() < 0.5 ? pick(i, 0.12) : null));
  const auxiliary = needs.map((_, i) => (random() < 0.35 ? pick(i, 0.4) : null));
  return {seed, dir, needs, filter, auxiliary};
}

const buildScript = (g: Graph): string => graphScript(g.dir, g.needs,
  (i) => [g.filter[i] ? `-F ${g.filter[i]}` : '', g.auxiliary[i] ? `-f ${g.auxiliary[i]}` : ''].join(' '));

interface Real {
  /** The objects of `undefined symbol` lines, in the order ld.so printed them. */
  order: string[];
  /** Names `ldd` lists as not found. */
  notFound: string[];
  /** What a dlopen(RTLD_NOW) stopped at: a missing library or the first undefined symbol. */
  firstDlopen: string | null;
  /** ld.so never finished (filtees that name each other): `ldd` died of SIGSEGV or ran out of mappings, the dlopen of SIGSEGV. */
  traceCrashed: boolean;
  dlopenCrashed: boolean;
}

function askLoader(g: Graph, sorter: string): Real {
  const {trace, dlopen} = runLoaders(g.dir, sorter, driver, 5_000);
  const m = /undefined symbol: (miss_\d+)|(\S+): cannot open shared object file/.exec(dlopen.out);
  return {
    order: firsts(relocationLines(trace.out)),
    notFound: [...trace.out.matchAll(/^\t(\S+) => not found$/gm)].map((n) => n[1]).sort(),
    firstDlopen: m ? (m[1] ?? m[2]) : null,
    // (loading copies until the mappings run out takes `ldd` 14 s here: still going after 5 s counts too)
    traceCrashed: trace.signal !== null || trace.out.includes('failed to map segment from shared object'), dlopenCrashed: dlopen.signal !== null,
  };
}

// Each object in the order it first fails: `ldd -r` of a filter library relocates a second copy of
// a filtee the main object put before itself (dl-deps.c), and prints its error twice.
const firsts = (names: string[]) => names.filter((n, i) => names.indexOf(n) === i);
const modelOrder = (r: CheckReport) => firsts(r.problems.filter((p) => p.symbol?.startsWith('miss_')).map((p) => p.object.split('/').pop()!));
const modelMissing = (r: CheckReport) => r.problems.filter((p) => p.kind === 'not-found').map((p) => p.library!);

describeIf(SORTERS_USABLE, SORTERS_SKIP_REASON)('DT_FILTER and DT_AUXILIARY', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-filters-');
    driver = buildDlopenDriver(join(tmp.dir, 'dlopen-driver'));
    graphs.push(...buildGraphs(tmp.dir, GRAPHS, 9_000, makeGraph, buildScript));
  }, 120_000);
  afterAll(() => tmp?.cleanup());

  test('relocation order, missing filtees and dlopen\'s first error agree with ld.so for every graph', async () => {
    const failures: string[] = [];
    let moved = 0;
    let missingFilter = 0;
    let missingAux = 0;
    let crashes = 0;
    let rootFiltees = 0;
    for (const g of graphs) {
      for (const sorter of SORTERS) {
        const real = askLoader(g, sorter);
        const options = {targets: [join(g.dir, lib(0))], ldLibraryPath: g.dir, glibcTunables: `glibc.rtld.dynamic_sort=${sorter}`};
        const asMain = await checkLibraries(options);
        const dlopened = await checkLibraries({...options, exe: driver, strict: true});
        const crash = (r: CheckReport) => r.problems.some((p) => p.kind === 'loader-abort' && p.summary.includes('never finishes loading'));
        if (real.traceCrashed || real.dlopenCrashed || crash(asMain) || crash(dlopened)) {
          // Nothing to compare but the crash itself: the loader never gets to relocating.
          if (real.traceCrashed !== crash(asMain) || real.dlopenCrashed !== crash(dlopened)) {
            failures.push(`graph ${g.seed} (needs ${JSON.stringify(g.needs)}, filter ${JSON.stringify(g.filter)}, auxiliary ${JSON.stringify(g.auxiliary)}), dynamic_sort=${sorter}: ` +
              `ldd ${real.traceCrashed ? 'never finishes' : 'finishes'}, the model says ${crash(asMain) ? 'it never finishes' : 'it finishes'}; ` +
              `dlopen ${real.dlopenCrashed ? 'never finishes' : 'finishes'}, the model says ${crash(dlopened) ? 'it never finishes' : 'it finishes'}`);
          }
          if (sorter === '1') crashes++;
          continue;
        }
        const firstProblem = dlopened.problems[0];
        const first = firstProblem === undefined ? null : firstProblem.kind === 'not-found' ? firstProblem.library : firstProblem.symbol;
        // ldd lists a missing auxiliary object too; ld.so itself goes on without it.
        const auxOnly = new Set(g.auxiliary.filter((a): a is string => a !== null && !g.filter.includes(a)));
        const expectedMissing = [...new Set(real.notFound.filter((name) => !auxOnly.has(name)))];
        const model = {order: modelOrder(asMain), missing: [...new Set(modelMissing(asMain))].sort(), first};
        // A filtee of the checked library itself goes before it, where ldd's listing (which starts
        // at the main object) never looks: ldd leaves out the missing filtees behind it, which a
        // dlopen still fails on. There the dlopen's failure is the reference for what is missing.
        const rootFiltee = g.filter[0] !== null || g.auxiliary[0] !== null;
        if (rootFiltee && sorter === '1') rootFiltees++;
        const sameOrder = JSON.stringify(model.order) === JSON.stringify(real.order);
        const sameFirst = first === real.firstDlopen;
        const sameMissing = rootFiltee ? !real.firstDlopen?.endsWith('.so') || model.missing.includes(real.firstDlopen)
          : JSON.stringify(model.missing) === JSON.stringify(expectedMissing);
        if (!sameOrder || !sameMissing || !sameFirst) {
          failures.push(`graph ${g.seed} (needs ${JSON.stringify(g.needs)}, filter ${JSON.stringify(g.filter)}, auxiliary ${JSON.stringify(g.auxiliary)}), dynamic_sort=${sorter}: ` +
            `ld.so order ${JSON.stringify(real.order)}, not found ${JSON.stringify(expectedMissing)}, dlopen stops at ${real.firstDlopen}; ` +
            `model ${JSON.stringify(model.order)}, ${JSON.stringify(model.missing)}, ${first}`);
        }
        if (sorter === '1') {
          if (real.notFound.some((n) => g.filter.includes(n))) missingFilter++;
          if (real.notFound.some((n) => auxOnly.has(n))) missingAux++;
          if (g.filter.some((f, i) => f !== null && g.needs.some((d) => d.includes(Number(/\d+/.exec(f)?.[0]))) && i !== 0)) moved++;
        }
      }
    }
    expect(failures).toEqual([]);
    // The graphs must cover each case, or the test could not tell a model without it apart.
    expect(missingFilter).toBeGreaterThan(2);
    expect(missingAux).toBeGreaterThan(2);
    expect(moved).toBeGreaterThan(5);
    expect(crashes).toBeGreaterThan(0);
    expect(rootFiltees).toBeGreaterThan(5);
  }, 180_000);

  describe('one filter library', () => {
    let dir: string;
    beforeAll(() => {
      dir = join(tmp.dir, 'one');
      mkdirSync(dir, {recursive: true});
      // libfl.so defines f and other and filters through libg.so (f only); libapp.so uses both.
      const script = [
        `cd '${dir}'`,
        `printf '\\t.text\\n\\t.globl f\\n\\t.type f,@function\\nf:\\n\\tret\\n\\t.globl other\\n\\t.type other,@function\\nother:\\n\\tret\\n' > fl.s`,
        `printf '\\t.text\\n\\t.globl f\\n\\t.type f,@function\\nf:\\n\\tret\\n\\t.globl onlyg\\n\\t.type onlyg,@function\\nonlyg:\\n\\tret\\n' > g.s`,
        `printf '\\t.text\\n\\t.globl use\\n\\t.type use,@function\\nuse:\\n\\tcall f@PLT\\n\\tcall other@PLT\\n\\tcall onlyg@PLT\\n\\tret\\n' > app.s`,
        'as -o fl.o fl.s && as -o g.o g.s && as -o app.o app.s',
        'mkdir -p g && ld -shared -soname libg.so -o g/libg.so g.o',
        'ld -shared -soname libfl.so -o libfl.so fl.o -F libg.so',
        'ld -shared -soname libaux.so -o libaux.so fl.o -f libg.so',
        `ld -shared -o libapp.so app.o --no-as-needed libfl.so -rpath '$ORIGIN'`,
        `ld -shared -o libappaux.so app.o --no-as-needed libaux.so -rpath '$ORIGIN'`,
      ].join(' && ');
      const built = spawnSync('sh', ['-ec', script], {encoding: 'utf8'});
      if (built.status !== 0) throw new Error(built.stderr);
    });

    const dlopen = (path: string, ld?: string) => spawnSync(driver, [path], {encoding: 'utf8', env: {PATH: process.env.PATH, ...(ld ? {LD_LIBRARY_PATH: ld} : {})}}).stdout.trim();

    test('a filtee the filter\'s search cannot find fails the load, and check says so', async () => {
      // libapp.so's RUNPATH is not libfl.so's: libg.so is searched with libfl.so's own (none).
      expect(dlopen(join(dir, 'libapp.so'))).toBe('ERR libg.so: cannot open shared object file: No such file or directory');
      const report = await checkLibraries({targets: [join(dir, 'libapp.so')]});
      // (ldd -r lists onlyg as undefined too: with libg.so missing, nothing defines it.)
      expect(report.problems.map((p) => [p.kind, p.library ?? p.symbol, p.object])).toEqual([
        ['not-found', 'libg.so', join(dir, 'libfl.so')], ['unversioned-undefined-symbol', 'onlyg', join(dir, 'libapp.so')],
      ]);
      expect(firstProblemLine(report)).toContain('libfl.so needs libg.so (its DT_FILTER filtee), which the loader cannot find');
    });

    test('found, the filtee comes before the filter and provides what only it defines', async () => {
      const ld = join(dir, 'g');
      expect(dlopen(join(dir, 'libapp.so'), ld)).toBe('OK');
      const report = await checkLibraries({targets: [join(dir, 'libapp.so')], ldLibraryPath: ld});
      expect(report.problems).toEqual([]);
      const trace = spawnSync(RTLD, [join(dir, 'libapp.so')], {encoding: 'utf8', env: {LD_TRACE_LOADED_OBJECTS: '1', LD_LIBRARY_PATH: ld}});
      // ldd lists libg.so before libfl.so: the filtee took the filter's place in the list.
      const listed = [...trace.stdout.matchAll(/^\t(\S+) =>/gm)].map((m) => m[1]);
      expect(listed.indexOf('libg.so')).toBeLessThan(listed.indexOf('libfl.so'));
      const fl = report.objects.find((o) => o.path.endsWith('/libfl.so'))!;
      expect(fl.needed).toEqual([expect.objectContaining({name: 'libg.so', path: join(ld, 'libg.so'), filter: 'filter'})]);
      expect(formatTree(report)).toContain(`    └── libg.so => ${join(ld, 'libg.so')} [DT_FILTER, ld_library_path: LD_LIBRARY_PATH entry ${ld}]`);
    });

    test('`-Wl,-fvisibility=hidden` (a DT_AUXILIARY named visibility=hidden, as CUDA 13\'s libnvtx3interop.so.1 has) loads', async () => {
      const out = join(dir, 'libvis.so');
      const cc = spawnSync('sh', ['-ec', `cd '${dir}' && printf 'int v(void){return 1;}\\n' > vis.c && gcc -shared -fPIC -o '${out}' vis.c -Wl,-fvisibility=hidden`], {encoding: 'utf8'});
      expect(cc.stderr).toBe('');
      expect(spawnSync('readelf', ['-d', out], {encoding: 'utf8'}).stdout).toContain('Auxiliary library: [visibility=hidden]');
      expect(dlopen(out)).toBe('OK');
      const targets = [out, '/usr/local/cuda-13.0/lib/libnvtx3interop.so.1'].filter((t) => existsSync(t));
      for (const t of targets) {
        const report = await checkLibraries({targets: [t]});
        expect(report.problems).toEqual([]);
        expect(report.objects[0].needed).toContainEqual({name: 'visibility=hidden', path: null, via: null, rule: null, filter: 'auxiliary'});
      }
    });

    test('a missing auxiliary object is passed over, and what only it defines is then missing', async () => {
      // Without libg.so the load goes on; onlyg (defined by nothing else) is then unbound.
      expect(dlopen(join(dir, 'libappaux.so'))).toBe(`ERR ${join(dir, 'libappaux.so')}: undefined symbol: onlyg`);
      const report = await checkLibraries({targets: [join(dir, 'libappaux.so')]});
      expect(report.problems.map((p) => [p.kind, p.symbol])).toEqual([['unversioned-undefined-symbol', 'onlyg']]);
      expect(formatTree(report)).toContain('    └── libg.so => not found [DT_AUXILIARY, not found: the loader goes on without it]');
      // Found, it binds.
      expect(dlopen(join(dir, 'libappaux.so'), join(dir, 'g'))).toBe('OK');
      expect((await checkLibraries({targets: [join(dir, 'libappaux.so')], ldLibraryPath: join(dir, 'g')})).problems).toEqual([]);
    });
  });
});
