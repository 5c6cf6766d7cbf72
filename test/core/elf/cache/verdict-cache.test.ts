import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {execFileSync} from 'node:child_process';
import {existsSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries, type CheckOptions, type CheckReport} from '../../../../src/core/elf/index.js';
import {keyHash, SETTLE_MS} from '../../../../src/core/elf/cache/verdict-cache.js';
import {cliEnv, runCli} from '../../../helpers/cli.js';
import {makeTempDir} from '../../../helpers/tmp.js';
import {describeIf} from '../../../helpers/skip.js';
import {buildLib, HAVE_GCC, HAVE_LDD, lddVerdict} from '../fixtures.js';

/**
 * The persistent verdict cache of `cudaenv check` (src/core/elf/cache/verdict-cache.ts): a file's
 * result is reused only while everything it depended on reads the same. Each test makes a real
 * change a user makes (a library rebuilt, one added earlier on the search path, a link
 * retargeted, one removed) after a cached check, and the next cached check must say what the
 * real loader (`ldd -r`) and a check without the cache say.
 */
const d = describeIf(HAVE_GCC && HAVE_LDD, 'needs gcc and ldd');

let tmp: {dir: string; cleanup: () => void};
/** Fixtures built up front and settled once (each test takes its own). */
const ready: Fixture[] = [];
beforeAll(async () => {
  // Jest runs no hook of a file whose tests are all skipped (describeIf without gcc or ldd).
  tmp = makeTempDir('cudaenv-verdict-cache-');
  for (let i = 0; i < 12; i++) ready.push(fixture());
  // A program (not position-independent) and a PIE beside each other in bin/.
  mkdirSync(join(ready[11].root, 'bin'));
  writeFileSync(join(ready[11].root, 'main.c'), 'int main(void) { return 0; }\n');
  execFileSync('gcc', ['-no-pie', '-fno-pie', '-o', join(ready[11].root, 'bin', 'prog'), join(ready[11].root, 'main.c')]);
  execFileSync('gcc', ['-pie', '-fPIE', '-o', join(ready[11].root, 'bin', 'pie'), join(ready[11].root, 'main.c')]);
  buildOld(join(ready[2].newDir, 'libv.so.1'));
  mkdirSync(join(ready[3].root, 'early'));
  buildOld(join(ready[5].root, 'other', 'libv.so'));
  buildOld(join(ready[6].newDir, 'libv.so.2'));
  image = sysrootImage();
  shared = sharedDependency();
  await settle();
}, 120_000);
afterAll(() => tmp?.cleanup());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Results resting on files younger than SETTLE_MS are not cached: fixtures wait this long once built. */
const settle = () => sleep(SETTLE_MS + 200);

interface Fixture {
  root: string;
  cacheDir: string;
  newDir: string;
  app: string;
  lib: string;
}

let serial = 0;
/** libuses.so needs b@V2 from libv.so, found by RUNPATH in new/; libv.so is a link to libv.so.2. */
function fixture(): Fixture {
  const root = join(tmp.dir, `f${serial++}`);
  const newDir = join(root, 'new');
  const real = buildLib({out: join(newDir, 'libv.so.2'), soname: 'libv.so', source: 'int a(void){return 1;}\nint b(void){return 2;}\n',
    versionScript: 'V1 { global: a; local: *; };\nV2 { global: b; } V1;\n'});
  symlinkSync('libv.so.2', join(newDir, 'libv.so'));
  const app = buildLib({out: join(root, 'app', 'libuses.so'), link: [real], runpath: newDir, source: 'int a(void); int b(void); int u(void){return a() + b();}\n'});
  return {root, cacheDir: join(root, 'cache'), newDir, app, lib: join(newDir, 'libv.so')};
}

let image: {img: string; app: string; alt: string};
/**
 * A system image for CUDAENV_SYSROOT: /usr/lib/x86_64-linux-gnu/libv.so is an absolute link to
 * /etc/alternatives/libv.so, an absolute link to /opt/v2/libv.so (the one with V2); /opt/v1 has
 * the old one. Links inside the image resolve inside it (src/core/elf/sysroot.ts).
 */
function sysrootImage(): {img: string; app: string; alt: string} {
  const img = join(tmp.dir, 'img');
  const usrlib = join(img, 'usr', 'lib', 'x86_64-linux-gnu');
  const v2 = buildLib({out: join(img, 'opt', 'v2', 'libv.so'), soname: 'libv.so', source: 'int a(void){return 1;}\nint b(void){return 2;}\n',
    versionScript: 'V1 { global: a; local: *; };\nV2 { global: b; } V1;\n', extra: ['-nostdlib']});
  buildLib({out: join(img, 'opt', 'v1', 'libv.so'), soname: 'libv.so', source: 'int a(void){return 1;}\n', versionScript: 'V1 { global: a; local: *; };\n', extra: ['-nostdlib']});
  mkdirSync(join(img, 'etc', 'alternatives'), {recursive: true});
  const alt = join(img, 'etc', 'alternatives', 'libv.so');
  symlinkSync('/opt/v2/libv.so', alt);
  mkdirSync(usrlib, {recursive: true});
  symlinkSync('/etc/alternatives/libv.so', join(usrlib, 'libv.so'));
  const app = buildLib({out: join(img, 'app', 'libuses.so'), link: [v2], source: 'int a(void); int b(void); int u(void){return a() + b();}\n', extra: ['-nostdlib']});
  return {img, app, alt};
}

let shared: {dir: string; newDir: string; cacheDir: string; first: string; second: string};
/**
 * Two libraries in one directory that both need libv.so (V2), found by LD_LIBRARY_PATH: no rule
 * of that search names either of them, so the check searches once for both (the search memo of
 * src/core/elf/search/loader-process.ts).
 */
function sharedDependency(): typeof shared {
  const root = join(tmp.dir, 'shared');
  const newDir = join(root, 'new');
  const real = buildLib({out: join(newDir, 'libv.so'), soname: 'libv.so', source: 'int a(void){return 1;}\nint b(void){return 2;}\n',
    versionScript: 'V1 { global: a; local: *; };\nV2 { global: b; } V1;\n'});
  const dir = join(root, 'app');
  const uses = 'int a(void); int b(void); int u(void){return a() + b();}\n';
  const first = buildLib({out: join(dir, 'liba.so'), link: [real], source: uses});
  const second = buildLib({out: join(dir, 'libb.so'), link: [real], source: uses});
  // Only the libraries in the directory: the sources and version script go elsewhere.
  for (const f of ['liba.so.c', 'libb.so.c']) renameSync(join(dir, f), join(root, f));
  return {dir, newDir, cacheDir: join(root, 'cache'), first, second};
}

/** libv.so without V2 (b missing): what an older build of the library looks like. */
function buildOld(out: string): string {
  return buildLib({out, soname: 'libv.so', source: 'int a(void){return 1;}\n', versionScript: 'V1 { global: a; local: *; };\n'});
}

function cacheEntries(dir: string): Record<string, {o: number[]}> {
  const files = readdirSync(dir).filter((n) => n.endsWith('.json'));
  const out: Record<string, {o: number[]}> = {};
  for (const f of files) Object.assign(out, JSON.parse(readFileSync(join(dir, f), 'utf8')).files);
  return out;
}

/** The report without the cache, for comparison. */
async function truth(options: CheckOptions): Promise<CheckReport> {
  return checkLibraries({...options, cacheDir: undefined});
}

d('check reuses a file\'s result only while everything it read is unchanged', () => {
  test('an unchanged tree is answered from the cache (a stored result, tampered with, is what comes back)', async () => {
    const f = ready[0];
    const options: CheckOptions = {targets: [join(f.root, 'app')], cacheDir: f.cacheDir};
    const first = await checkLibraries(options);
    expect(first.ok).toBe(true);
    // The library and, skipped with its reason, the C source beside it.
    expect(Object.keys(cacheEntries(f.cacheDir)).sort()).toEqual([f.app, `${f.app}.c`]);
    // Prove the second check reads the cache: mark the stored object and see the mark come back.
    const [file] = readdirSync(f.cacheDir);
    const data = JSON.parse(readFileSync(join(f.cacheDir, file), 'utf8'));
    data.objects[data.files[f.app].o[0]].soname = 'from-the-cache';
    writeFileSync(join(f.cacheDir, file), JSON.stringify(data));
    const second = await checkLibraries(options);
    expect(second.objects[0].soname).toBe('from-the-cache');
    // A stored entry of the wrong shape is a miss, not a crash.
    data.files[f.app].problems = 'not a list';
    writeFileSync(join(f.cacheDir, file), JSON.stringify(data));
    expect(await checkLibraries(options)).toEqual(first);
    // And a damaged cache file is ignored: the check is made and the file written anew.
    writeFileSync(join(f.cacheDir, file), '{"format": 1, "files": ');
    expect(await checkLibraries(options)).toEqual(first);
    expect(Object.keys(cacheEntries(f.cacheDir)).sort()).toEqual([f.app, `${f.app}.c`]);
  });

  test('another kernel (its rseq area, its page size) is another platform: results cached under the old one are not reused', async () => {
    const f = ready[10];
    const options: CheckOptions = {targets: [f.app], cacheDir: f.cacheDir};
    const first = await checkLibraries(options);
    const [file] = readdirSync(f.cacheDir);
    const data = JSON.parse(readFileSync(join(f.cacheDir, file), 'utf8'));
    // The stored platform is this kernel's (glibc 2.41 and later put the rseq area in the static TLS block).
    const platform = data.inputs.find((i: unknown[]) => i[0] === 'p');
    const stored = JSON.parse(platform[2]);
    expect(stored.rseq).toEqual(expect.objectContaining({featureSize: expect.anything()}));
    expect(stored.pageSize).toBeGreaterThan(0);
    data.objects[data.files[f.app].o[0]].soname = 'from-the-cache';
    writeFileSync(join(f.cacheDir, file), JSON.stringify(data));
    expect((await checkLibraries(options)).objects[0].soname).toBe('from-the-cache');
    // The same result as if stored under a kernel with a larger rseq area: checked again.
    platform[2] = JSON.stringify({...stored, rseq: {featureSize: (stored.rseq.featureSize ?? 32) + 32, align: stored.rseq.align}});
    writeFileSync(join(f.cacheDir, file), JSON.stringify(data));
    expect(await checkLibraries(options)).toEqual(first);
  });

  test('a program named on its own is checked; in a directory it is skipped: whichever came first, the cache gives each its own answer', async () => {
    const f = ready[11];
    const dir = join(f.root, 'bin');
    const [prog, pie] = [join(dir, 'prog'), join(dir, 'pie')];
    const asDir: CheckOptions = {targets: [dir], cacheDir: f.cacheDir};
    const asProg: CheckOptions = {targets: [prog], cacheDir: f.cacheDir};
    const asPie: CheckOptions = {targets: [pie], cacheDir: f.cacheDir};
    const expected = new Map<CheckOptions, CheckReport>();
    for (const o of [asDir, asProg, asPie]) expected.set(o, await truth(o));
    expect(expected.get(asDir)!.checked).toEqual([]);
    expect(expected.get(asDir)!.skipped.map((s) => s.reason)).toEqual(['a position-independent executable, not a shared object', 'an ELF executable, not a shared object']);
    expect(expected.get(asProg)!.checked).toEqual([prog]);
    expect(expected.get(asPie)!.checked).toEqual([pie]);
    // The directory first (its skips cached), then each program (checked, not the skip reused),
    // then the directory again (skipped, not the check reused), and so on.
    for (const o of [asDir, asProg, asPie, asDir, asProg, asPie]) expect(await checkLibraries(o)).toEqual(expected.get(o));
    // Once each has been answered, a program named on its own again comes from the cache.
    const [file] = readdirSync(f.cacheDir);
    const data = JSON.parse(readFileSync(join(f.cacheDir, file), 'utf8'));
    expect(data.files[prog].n).toBe(1);
    data.objects[data.files[prog].o[0]].soname = 'from-the-cache';
    writeFileSync(join(f.cacheDir, file), JSON.stringify(data));
    expect((await checkLibraries(asProg)).objects[0].soname).toBe('from-the-cache');
  });

  test('a library rebuilt in place without the version the checked file needs', async () => {
    const f = ready[1];
    const options: CheckOptions = {targets: [f.app], cacheDir: f.cacheDir};
    expect((await checkLibraries(options)).ok).toBe(true);
    buildOld(join(f.newDir, 'libv.so.2'));
    const after = await checkLibraries(options);
    expect(lddVerdict(f.app).versions).toEqual([`V2 ${f.app}`]);
    expect(after.ok).toBe(false);
    expect(after.problems.map((p) => `${p.kind} ${p.version}`)).toContain('version-not-found V2');
    expect(after).toEqual(await truth(options));
  });

  test('a file whose search was made for another file\'s check depends on what that search read (libv.so rebuilt for both)', async () => {
    const {dir, newDir, cacheDir, first, second} = shared;
    const options: CheckOptions = {targets: [dir], cacheDir, ldLibraryPath: newDir};
    const before = await checkLibraries(options);
    expect(before.ok).toBe(true);
    expect(before.checked).toEqual([first, second]);
    // Both found libv.so the same way; the second file's record must hold libv.so all the same.
    for (const o of before.objects.filter((x) => x.path === first || x.path === second)) {
      expect(o.needed.find((n) => n.name === 'libv.so')).toMatchObject({path: join(newDir, 'libv.so'), via: 'ld_library_path'});
    }
    const stored = JSON.parse(readFileSync(join(cacheDir, readdirSync(cacheDir).find((n) => n.endsWith('.json'))!), 'utf8'));
    const lib = stored.inputs.findIndex((i: string[]) => i[0] === 's' && i[1] === join(newDir, 'libv.so'));
    expect(lib).toBeGreaterThanOrEqual(0);
    expect(stored.files[first].i).toContain(lib);
    expect(stored.files[second].i).toContain(lib);
    buildOld(join(newDir, 'libv.so'));
    const after = await checkLibraries(options);
    expect(lddVerdict(second, newDir).versions).toEqual([`V2 ${second}`]);
    expect(after.problems.filter((p) => p.kind === 'version-not-found').map((p) => p.object)).toEqual([first, second]);
    expect(after).toEqual(await truth(options));
  });

  test('a link retargeted to another file (libv.so -> libv.so.1)', async () => {
    const f = ready[2];
    const options: CheckOptions = {targets: [f.app], cacheDir: f.cacheDir};
    expect((await checkLibraries(options)).ok).toBe(true);
    unlinkSync(f.lib);
    symlinkSync('libv.so.1', f.lib);
    const after = await checkLibraries(options);
    expect(lddVerdict(f.app).versions).toEqual([`V2 ${f.app}`]);
    expect(after.ok).toBe(false);
    expect(after).toEqual(await truth(options));
  });

  test('a library added to a directory searched before the one that had it (LD_LIBRARY_PATH)', async () => {
    const f = ready[3];
    const early = join(f.root, 'early');
    const options: CheckOptions = {targets: [f.app], cacheDir: f.cacheDir, ldLibraryPath: early};
    const before = await checkLibraries(options);
    expect(before.ok).toBe(true);
    expect(Object.keys(cacheEntries(f.cacheDir))).toEqual([f.app]);
    buildOld(join(early, 'libv.so'));
    const after = await checkLibraries(options);
    expect(lddVerdict(f.app, early).libs).toContain(`libv.so => ${early}/libv.so`);
    expect(after.objects[0].needed.find((n) => n.name === 'libv.so')?.path).toBe(join(early, 'libv.so'));
    expect(after.ok).toBe(false);
    expect(after).toEqual(await truth(options));
  });

  test('a glibc-hwcaps subdirectory created in a searched directory (the loader prefers it)', async () => {
    const f = ready[9];
    const options: CheckOptions = {targets: [f.app], cacheDir: f.cacheDir};
    expect((await checkLibraries(options)).ok).toBe(true);
    buildOld(join(f.newDir, 'glibc-hwcaps', 'x86-64-v2', 'libv.so'));
    const after = await checkLibraries(options);
    // Whatever this CPU's loader picks (every x86-64 CPU since 2009 is v2), check must pick it too.
    const real = lddVerdict(f.app).libs.find((l) => l.startsWith('libv.so => '));
    expect(real).toBe(`libv.so => ${after.objects[0].needed.find((n) => n.name === 'libv.so')?.path}`);
    if (real?.includes('x86-64-v2')) expect(after.ok).toBe(false);
    expect(after).toEqual(await truth(options));
  });

  test('CUDAENV_SYSROOT: a link inside the image retargeted (update-alternatives in the image)', async () => {
    const {img, app, alt} = image;
    const options: CheckOptions = {targets: [app], sysroot: img, cacheDir: join(img, 'cache')};
    const before = await checkLibraries(options);
    expect(before.problems).toEqual([]);
    expect(before.objects[0].needed[0].path).toBe(`${img}/usr/lib/x86_64-linux-gnu/libv.so`);
    expect(Object.keys(cacheEntries(join(img, 'cache')))).toContain(app);
    unlinkSync(alt);
    symlinkSync('/opt/v1/libv.so', alt);
    const after = await checkLibraries(options);
    expect(after.ok).toBe(false);
    expect(after.problems[0]).toMatchObject({kind: 'version-not-found', version: 'V2'});
    expect(after).toEqual(await truth(options));
  });

  test('a library removed, then put back', async () => {
    const f = ready[4];
    const options: CheckOptions = {targets: [f.app], cacheDir: f.cacheDir};
    expect((await checkLibraries(options)).ok).toBe(true);
    renameSync(join(f.newDir, 'libv.so.2'), join(f.root, 'moved'));
    const gone = await checkLibraries(options);
    expect(gone.problems[0].kind).toBe('not-found');
    expect(gone).toEqual(await truth(options));
    renameSync(join(f.root, 'moved'), join(f.newDir, 'libv.so.2'));
    expect((await checkLibraries(options)).ok).toBe(true);
  });

  test('a directory of the search path turned into a link elsewhere', async () => {
    const f = ready[5];
    const other = join(f.root, 'other');
    const options: CheckOptions = {targets: [f.app], cacheDir: f.cacheDir};
    expect((await checkLibraries(options)).ok).toBe(true);
    renameSync(f.newDir, join(f.root, 'new-was'));
    symlinkSync(other, f.newDir);
    const after = await checkLibraries(options);
    expect(lddVerdict(f.app).versions).toEqual([`V2 ${f.app}`]);
    expect(after.ok).toBe(false);
    expect(after).toEqual(await truth(options));
  });

  test('results resting on files changed within the settling time are not cached', async () => {
    const f = fixture();
    const options: CheckOptions = {targets: [f.app], cacheDir: f.cacheDir};
    expect((await checkLibraries(options)).ok).toBe(true);
    expect(readdirSync(f.root)).not.toContain('cache');
    await settle();
    await checkLibraries(options);
    expect(Object.keys(cacheEntries(f.cacheDir))).toEqual([f.app]);
  });

  test('failing results are not cached (their explanations look beyond what was recorded)', async () => {
    const f = ready[6];
    const options: CheckOptions = {targets: [f.app], cacheDir: f.cacheDir};
    expect((await checkLibraries(options)).ok).toBe(false);
    expect(readdirSync(f.root)).not.toContain('cache');
  });

  test('another LD_LIBRARY_PATH is another cache file; a cache directory that cannot be written is no error', async () => {
    const f = ready[7];
    await checkLibraries({targets: [f.app], cacheDir: f.cacheDir});
    await checkLibraries({targets: [f.app], cacheDir: f.cacheDir, ldLibraryPath: '/nonexistent'});
    expect(readdirSync(f.cacheDir).filter((n) => n.endsWith('.json'))).toHaveLength(2);
    // A store that cannot be written (here a file where the directory should be: root writes
    // through permissions): the check answers as without a cache.
    const report = await checkLibraries({targets: [f.app], cacheDir: join(f.app, 'check')});
    expect(report).toEqual(await truth({targets: [f.app]}));
  }, 20_000);
});

d('the CLI: $CUDAENV_DIR/cache/check, --no-cache, and the start-up path agree', () => {
  test('cached, uncached, fast path and oclif print the same', async () => {
    const f = ready[8];
    const store = join(f.root, 'store');
    const env = cliEnv(store);
    delete env.LD_LIBRARY_PATH;
    const dir = join(f.root, 'app');
    const plain = runCli(['check', dir], {env});
    expect(plain.status).toBe(0);
    expect(readdirSync(join(store, 'cache', 'check')).some((n) => n.endsWith('.json'))).toBe(true);
    const cached = runCli(['check', dir], {env});
    const uncached = runCli(['check', '--no-cache', dir], {env});
    const viaOclif = runCli(['check', '--strict', dir], {env});
    expect(cached.stdout).toBe(plain.stdout);
    expect(uncached.stdout).toBe(plain.stdout);
    expect(viaOclif.stdout).toBe(plain.stdout);
    const json = runCli(['check', '--json', dir], {env});
    const jsonUncached = runCli(['check', '--json', '--no-cache', dir], {env});
    expect(JSON.parse(json.stdout)).toEqual(JSON.parse(jsonUncached.stdout));
    // `cudaenv cache` counts them, `cache clean --partial` keeps them, `cache clean` frees them.
    const shown = JSON.parse(runCli(['cache', '--json'], {env}).stdout) as {checks: {files: number; bytes: number}; bytes: number};
    expect(shown.checks.files).toBeGreaterThanOrEqual(2);
    expect(shown.bytes).toBe(shown.checks.bytes);
    expect(runCli(['cache'], {env}).stdout).toMatch(/\d+ check result files \(.*\), reused by `cudaenv check`/);
    expect(runCli(['cache', 'clean', '--partial'], {env}).status).toBe(0);
    expect(existsSync(join(store, 'cache', 'check'))).toBe(true);
    const clean = runCli(['cache', 'clean'], {env});
    expect(clean.stdout).toMatch(new RegExp(`^Removed 0 files and ${shown.checks.files} check result files from the cache`, 'm'));
    expect(existsSync(join(store, 'cache', 'check'))).toBe(false);
    expect(runCli(['check', dir], {env}).stdout).toBe(plain.stdout);
  });
});

test('the cache file\'s name is the four-lane FNV-1a of its key, as before its rewrite for the interpreter', () => {
  // Values computed with the array form it replaced.
  expect(keyHash('')).toBe('811c9dc5050c5d1f1b8735936b43a9b5');
  expect(keyHash(JSON.stringify({format: 1, code: '/mnt/cudaenv/dist/fast-path.bundle.cjs=65024:5349727:494877:33188:1796554916120.02:1796554916120.02', x: 'y'.repeat(200)}))).toBe('ca5cf2a2f057d9d6c727759c62c23c38');
  expect(keyHash('é\u{1F600}')).toMatch(/^[0-9a-f]{32}$/);
});
