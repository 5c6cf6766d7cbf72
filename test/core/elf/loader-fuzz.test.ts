import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {existsSync} from 'node:fs';
import {join} from 'node:path';
import {makeTempDir} from '../../helpers/tmp.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {generateCase, type FuzzCase} from './fuzz/generate.js';
import {runScript} from './fuzz/run-script.js';
import {caseDisagreements, parseTrace, withoutPreloadWarnings, type Real, type RealDlopen} from './fuzz/trace.js';
import {buildDlopenDriver, haveCommand, HAVE_GCC} from './fixtures.js';

/**
 * The seeded differential fuzzer of issue 12: random library graphs, each asked of the real
 * loader twice, as `ldd -r` does (ld.so in trace mode, LD_BIND_NOW, LD_WARN) and as a program
 * that dlopens it (RTLD_NOW|RTLD_GLOBAL), and of the model the same two ways (the library as
 * the main object; --exe with the dlopen driver). Any disagreement fails with the case's seed.
 * CUDAENV_FUZZ_SEED / CUDAENV_FUZZ_CASES replay or widen a run.
 */
const RTLD = '/lib64/ld-linux-x86-64.so.2';
const usable = process.arch === 'x64' && HAVE_GCC && haveCommand('as') && haveCommand('ld') && existsSync(RTLD);
const BASE_SEED = Number(process.env.CUDAENV_FUZZ_SEED ?? 12_000);
const CASES = Number(process.env.CUDAENV_FUZZ_CASES ?? 200);
const DEFAULT_SEEDS = process.env.CUDAENV_FUZZ_SEED === undefined && process.env.CUDAENV_FUZZ_CASES === undefined;

/** Every third case runs with glibc's original dependency sorter (the tunable), where the loader has it. */
const tunablesOf = (c: FuzzCase): string | undefined => (c.seed % 3 === 0 ? 'glibc.rtld.dynamic_sort=1' : undefined);

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

let tmp: {dir: string; cleanup: () => void};
let driver: string;
let cases: FuzzCase[] = [];
const realTrace = new Map<number, Real>();
const realDl = new Map<number, RealDlopen>();
/** LD_DEBUG=files of the trace-mode run. */
const realFiles = new Map<number, string>();

describeIf(usable, 'needs x86-64 with gcc, as, ld and /lib64/ld-linux-x86-64.so.2')('seeded differential fuzzer (issue 12)', () => {
  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-fuzz-');
    driver = buildDlopenDriver(join(tmp.dir, 'dlopen-driver'));
    // Generate every case, then build them in two shells at once (one process per tool call,
    // not per case), then ask the real loader about all of them in one more shell each.
    const scripts: string[] = [];
    const places: Array<() => void> = [];
    for (let i = 0; i < CASES; i++) {
      const seed = BASE_SEED + i;
      const {fuzz, script, place} = generateCase(seed, join(tmp.dir, `c${seed}`));
      cases.push(fuzz);
      scripts.push(script);
      places.push(place);
    }
    const halves = [scripts.filter((_, i) => i % 2 === 0), scripts.filter((_, i) => i % 2 === 1)];
    const built = await Promise.all(halves.map((h) => runScript(tmp.dir, `set -e\n${h.join('\n')}`)));
    for (const b of built) if (b.code !== 0) throw new Error(`building the fuzz cases failed:\n${b.out.slice(-3000)}`);
    for (const place of places) place();
    const oracle = (c: FuzzCase) => {
      // env's -u options first, then its assignments.
      const unset = [c.ldLibraryPath === undefined ? '-u LD_LIBRARY_PATH' : '', tunablesOf(c) === undefined ? '-u GLIBC_TUNABLES' : '', c.preload === undefined ? '-u LD_PRELOAD' : ''];
      const set = [c.ldLibraryPath === undefined ? '' : `LD_LIBRARY_PATH=${q(c.ldLibraryPath)}`, tunablesOf(c) === undefined ? '' : `GLIBC_TUNABLES=${tunablesOf(c)}`,
        c.preload === undefined ? '' : `LD_PRELOAD=${q(c.preload)}`];
      const env = ['env', ...unset, ...set].filter(Boolean).join(' ');
      // What it mapped, from LD_DEBUG=files (to a file of its own: the trace output stays as ldd's).
      const debug = join(tmp.dir, `files-${c.seed}`);
      return `cd ${q(c.dir)}\necho "@@T ${c.seed}"\n${env} LD_DEBUG=files LD_DEBUG_OUTPUT=${q(debug)} LD_TRACE_LOADED_OBJECTS=1 LD_WARN=yes LD_BIND_NOW=yes ${RTLD} ${q(c.target)} 2>&1\n` +
        `echo "@@TRC $?"\necho "@@F"\ncat ${q(debug)}.* 2>/dev/null\nrm -f ${q(debug)}.*\n` +
        `echo "@@D ${c.seed}"\n${env} ${q(driver)} ${q(c.target)} 2>&1\necho "@@RC $?"\n`;
    };
    const asked = await Promise.all([0, 1].map((h) => runScript(tmp.dir, cases.filter((_, i) => i % 2 === h).map(oracle).join(''))));
    for (const {out} of asked) {
      for (const chunk of out.split(/^@@T /m).slice(1)) {
        const seed = Number(chunk.slice(0, chunk.indexOf('\n')));
        const c = cases.find((x) => x.seed === seed)!;
        const [traced, dl] = chunk.slice(chunk.indexOf('\n') + 1).split(/^@@D \d+\n/m);
        const [trace, files] = traced.split(/^@@F\n/m);
        realTrace.set(seed, parseTrace(c.dir, trace));
        realFiles.set(seed, files ?? '');
        const rc = Number(/@@RC (\d+)/.exec(dl)?.[1] ?? -1);
        const message = withoutPreloadWarnings(dl.replace(/@@RC \d+\n?/, ''));
        const abort = /Inconsistency detected by ld\.so: [^:]+: \d+: (\w+): Assertion/.exec(message)?.[1] ?? null;
        realDl.set(seed, {ok: rc === 0 && /^OK$/m.test(message), abort, message});
      }
    }
  }, 300_000);
  afterAll(() => tmp?.cleanup());

  test.each(Array.from({length: 4}, (_, i) => i))('batch %i: the model agrees with ld.so in trace mode and with dlopen', async (batch) => {
    const failures: string[] = [];
    const mine = cases.filter((_, i) => i % 4 === batch);
    for (const c of mine) {
      const r = realTrace.get(c.seed);
      const d = realDl.get(c.seed);
      if (!r || !d) {
        failures.push(`seed ${c.seed}: the loader was not asked`);
        continue;
      }
      const opts = {targets: [c.target], ldLibraryPath: c.ldLibraryPath, cwd: c.dir, glibcTunables: tunablesOf(c), preload: c.preload === undefined ? undefined : [c.preload]};
      const diffs = await caseDisagreements(opts, r, d, realFiles.get(c.seed) ?? '', driver, c.dir);
      if (diffs.length > 0) {
        failures.push(`seed ${c.seed} (replay: CUDAENV_FUZZ_SEED=${c.seed} CUDAENV_FUZZ_CASES=1)${tunablesOf(c) ? `, GLIBC_TUNABLES=${tunablesOf(c)}` : ""}:\n${c.description.join('\n')}\n${diffs.join('\n')}\n--- ld.so trace output:\n${r.raw.trim()}`);
      }
    }
    expect(mine.length).toBeGreaterThan(0);
    if (failures.length > 0) throw new Error(`${failures.length} of ${mine.length} cases disagree:\n\n${failures.slice(0, 6).join('\n\n')}`);
  }, 240_000);

  testIf(DEFAULT_SEEDS, 'coverage is asserted on the default seeds only (CUDAENV_FUZZ_SEED or CUDAENV_FUZZ_CASES is set)')('the cases reach a file the loader stops at, in trace mode and in a dlopen', () => {
    const stops = /invalid ELF header|file too short/;
    expect(cases.filter((c) => realTrace.get(c.seed)!.fatal !== null && stops.test(realTrace.get(c.seed)!.raw)).length).toBeGreaterThan(0);
    expect(cases.filter((c) => stops.test(realDl.get(c.seed)!.message)).length).toBeGreaterThan(0);
    // Stops after the loader had mapped a dependency besides the main object: what compareMappedAtStop checks.
    const mapped = (seed: number) => (realFiles.get(seed)!.match(/generating link map/g) ?? []).length;
    expect(cases.filter((c) => realTrace.get(c.seed)!.fatal !== null && mapped(c.seed) >= 2).length).toBeGreaterThan(0);
  });
});
