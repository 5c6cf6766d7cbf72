import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readdirSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, firstProblemLine} from '../../../src/core/elf/index.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {REPO_ROOT} from '../../helpers/cli.js';
import {buildLib, ctypesLoad, HAVE_GCC, HAVE_LDD, HAVE_PYTHON, lddVerdict, withoutMissingVersions} from './fixtures.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {NEEDS} from '../../helpers/capabilities.js';

/**
 * The loader model on real CUDA libraries from Debian (bash test/fixtures/fetch-cuda-libs.sh):
 * CUDA 11.8 (bookworm) and 12.4 (trixie). Each file agrees with `ldd -r`, and the issue's
 * failures are reproduced with the real libcusparse, libcudart and libcupti.
 */
const DL = join(REPO_ROOT, 'test', 'fixtures', 'downloaded');
const TRIXIE = join(DL, 'trixie', 'usr', 'lib', 'x86_64-linux-gnu');
const BOOKWORM = join(DL, 'bookworm', 'usr', 'lib', 'x86_64-linux-gnu');
const present = existsSync(join(TRIXIE, 'libcusparse.so.12')) && existsSync(join(TRIXIE, 'libnvJitLink.so.12')) &&
  existsSync(join(BOOKWORM, 'libcudart.so.11.0'));
const enabled = present && HAVE_GCC && HAVE_LDD;
const d = describeIf(enabled, present ? 'needs gcc and ldd (apt-get install gcc libc-bin)' : NEEDS.realCudaLibs);

function sameAsLdd(report: Awaited<ReturnType<typeof checkLibraries>>, target: string, ldLibraryPath?: string): void {
  const real = lddVerdict(target, ldLibraryPath);
  const found = new Set<string>();
  const seen = new Set<string>([target]);
  for (const o of report.objects) {
    for (const e of o.needed) {
      // ldd -r is the oracle of what ld.so loads at start: what libraries dlopen later is not in it.
      if (e.dlopen) continue;
      if (e.path === null) found.add(`${e.name} => not found`);
      else if (!seen.has(e.path) && !/\/ld-linux[^/]*$/.test(e.path)) {
        seen.add(e.path);
        found.add(`${e.name} => ${e.path}`);
      }
    }
  }
  expect([...found].sort()).toEqual(real.libs);
  const atStart = report.problems.filter((p) => p.edge !== 'dlopen');
  expect(atStart.filter((p) => p.kind === 'version-not-found').map((p) => `${p.version} ${p.object}`).sort()).toEqual(real.versions);
  const missing = new Set(atStart.filter((p) => p.kind === 'not-found').map((p) => p.library));
  const refs = atStart.filter((p) => p.kind.endsWith('undefined-symbol'));
  const missingRefs = new Set(refs.filter((p) => p.library && missing.has(p.library)).map((p) => `${p.symbol} ${p.object}`));
  const symbols = refs.map((p) => `${p.symbol}@${p.version ?? ''} ${p.object}`);
  expect(withoutMissingVersions(symbols, missingRefs)).toEqual(withoutMissingVersions(real.symbols, missingRefs));
}

// The second oracle (dlopen through python3's ctypes) is asserted only where python3 runs: say so when it does not.
testIf(HAVE_PYTHON, NEEDS.tool('python3'))('the dlopen oracle (python3 ctypes) runs here', () => {
  expect(ctypesLoad('libc.so.6')).toBeNull();
  expect(ctypesLoad('libcudaenv-no-such.so.1')).toContain('libcudaenv-no-such.so.1: cannot open shared object file');
});

// ldd -r and a plain dlopen are oracles of what ld.so loads at start: the run-time loads
// (test/core/elf/runtime/runtime-loads.test.ts) are left out here.
d('real CUDA libraries (Debian non-free)', () => {
  let tmp: {dir: string; cleanup: () => void};
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-cuda-libs-');
  });
  afterAll(() => tmp?.cleanup());

  test('every shared object of CUDA 11.8 and 12.4 resolves exactly as ldd -r says', async () => {
    for (const dir of [BOOKWORM, TRIXIE]) {
      const report = await checkLibraries({runtimeLoads: false, targets: [dir]});
      expect(report.checked.length).toBeGreaterThanOrEqual(5);
      for (const lib of report.checked) sameAsLdd(await checkLibraries({runtimeLoads: false, targets: [lib]}), lib);
    }
  });

  test('the seed case with the real libcusparse.so.12: an older libnvJitLink.so.12 first on LD_LIBRARY_PATH', async () => {
    const wheel = join(tmp.dir, 'wheel');
    mkdirSync(wheel, {recursive: true});
    // Links keep $ORIGIN at the wheel directory (ld.so does not resolve them for libraries).
    symlinkSync(join(TRIXIE, 'libcusparse.so.12'), join(wheel, 'libcusparse.so.12'));
    symlinkSync(join(TRIXIE, 'libnvJitLink.so.12'), join(wheel, 'libnvJitLink.so.12'));
    const target = join(wheel, 'libcusparse.so.12');
    // An older libnvJitLink.so.12: the same version node, every symbol libcusparse uses except the 12.4 ones.
    const nm = spawnSync('nm', ['-D', '--undefined-only', target], {encoding: 'utf8'});
    const wanted = [...nm.stdout.matchAll(/ U (\w+)@libnvJitLink\.so\.12/g)].map((m) => m[1]);
    expect(wanted).toContain('__nvJitLinkComplete_12_4');
    const old = wanted.filter((s) => !s.endsWith('_12_4'));
    const oldDir = join(tmp.dir, 'store', 'versions', '12.3.2', 'lib64');
    buildLib({
      out: join(oldDir, 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12',
      source: `${old.map((s) => `int ${s}(void){return 0;}`).join('\n')}\nint __nvJitLinkComplete_12_3(void){return 0;}\n`,
      versionScript: `libnvJitLink.so.12 { global: ${[...old, '__nvJitLinkComplete_12_3'].join('; ')}; local: *; };\n`,
    });
    const clean = await checkLibraries({runtimeLoads: false, targets: [target]});
    sameAsLdd(clean, target);
    expect(clean.ok).toBe(true);
    const report = await checkLibraries({runtimeLoads: false, targets: [target], ldLibraryPath: oldDir, storeVersionsDir: join(tmp.dir, 'store', 'versions')});
    sameAsLdd(report, target, oldDir);
    expect(report.ok).toBe(false);
    const p = report.problems.find((x) => x.symbol === '__nvJitLinkComplete_12_4')!;
    expect(p).toMatchObject({kind: 'undefined-symbol', library: 'libnvJitLink.so.12', version: 'libnvJitLink.so.12'});
    expect(p.shadowed).toContain(`${wheel}/libnvJitLink.so.12 (DT_RUNPATH entry $ORIGIN of ${target}), which would satisfy it`);
    expect(firstProblemLine(report)).toContain('run `cudaenv use 12.3.2 --ld-library-path none`');
    if (HAVE_PYTHON) expect(ctypesLoad(target, oldDir)).toContain('undefined symbol: __nvJitLinkComplete_12_4, version libnvJitLink.so.12');
  });

  test('libcudart.so.11.0 and libcupti.so.12: not found where only the other CUDA major is present', async () => {
    const app = buildLib({
      out: join(tmp.dir, 'app', 'libapp.so'), source: 'int cudaGetDeviceCount(int*); int cuptiGetVersion(unsigned*);\nint a(void){int n; unsigned v; return cudaGetDeviceCount(&n) + cuptiGetVersion(&v);}\n',
      link: [join(BOOKWORM, 'libcudart.so.11.0'), join(TRIXIE, 'libcupti.so.12')],
    });
    for (const [dir, missing] of [[TRIXIE, 'libcudart.so.11.0'], [BOOKWORM, 'libcupti.so.12']] as const) {
      const report = await checkLibraries({runtimeLoads: false, targets: [app], ldLibraryPath: dir});
      sameAsLdd(report, app, dir);
      expect(report.problems.filter((p) => p.kind === 'not-found').map((p) => p.library)).toEqual([missing]);
      expect(firstProblemLine(report)).toContain(`needs ${missing}, which the loader cannot find`);
    }
    const both = await checkLibraries({runtimeLoads: false, targets: [app], ldLibraryPath: `${BOOKWORM}:${TRIXIE}`});
    sameAsLdd(both, app, `${BOOKWORM}:${TRIXIE}`);
    expect(both.ok).toBe(true);
    expect(readdirSync(BOOKWORM).length).toBeGreaterThan(0);
  });
});
