import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {runCheckCli, runCheckText, type CheckCliInput} from '../../../../src/core/elf/api.js';
import {SETTLE_MS} from '../../../../src/core/elf/cache/verdict-cache.js';
import {makeTempDir} from '../../../helpers/tmp.js';
import {describeIf} from '../../../helpers/skip.js';
import {buildLib, HAVE_GCC, HAVE_LDD, lddVerdict} from '../fixtures.js';

/**
 * The kept text of a plain `cudaenv check` (src/core/elf/cache/report-memo.ts): given again while
 * every fact it rests on reads the same, and made anew after any real change a user makes (a
 * library rebuilt, one added to a checked directory, a link of a system image re-pointed); what it
 * then says is what a check without any cache and the real loader (`ldd -r`) say.
 */
const d = describeIf(HAVE_GCC && HAVE_LDD, 'needs gcc and ldd');

let tmp: {dir: string; cleanup: () => void};
let serial = 0;

interface Tree {
  root: string;
  app: string;
  newDir: string;
  cacheDir: string;
}

const V2 = 'V1 { global: a; local: *; };\nV2 { global: b; } V1;\n';
const USES = 'int a(void); int b(void); int u(void){return a() + b();}\n';

/** app/libuses.so needs b@V2 of libv.so, found by its RUNPATH in new/ (the C sources kept elsewhere). */
function tree(): Tree {
  const root = join(tmp.dir, `t${serial++}`);
  const newDir = join(root, 'new');
  const lib = buildLib({out: join(newDir, 'libv.so'), soname: 'libv.so', source: 'int a(void){return 1;}\nint b(void){return 2;}\n', versionScript: V2});
  const app = buildLib({out: join(root, 'app', 'libuses.so'), link: [lib], runpath: newDir, source: USES});
  unlinkSync(`${app}.c`);
  return {root, app, newDir, cacheDir: join(root, 'cache')};
}

/** libv.so without V2: what an older build of it looks like. */
function buildOld(out: string, extra: string[] = []): void {
  buildLib({out, soname: 'libv.so', source: 'int a(void){return 1;}\n', versionScript: 'V1 { global: a; local: *; };\n', extra});
}

/**
 * An image for CUDAENV_SYSROOT: /usr/lib/x86_64-linux-gnu/libv.so -> /etc/alternatives/libv.so ->
 * /opt/v2/libv.so (with V2); /opt/v1 holds the old one. Its app needs b@V2 through ld.so's path.
 */
function image(): {img: string; app: string; alt: string; cacheDir: string} {
  const img = join(tmp.dir, 'img');
  const usrlib = join(img, 'usr', 'lib', 'x86_64-linux-gnu');
  const v2 = buildLib({out: join(img, 'opt', 'v2', 'libv.so'), soname: 'libv.so', source: 'int a(void){return 1;}\nint b(void){return 2;}\n', versionScript: V2, extra: ['-nostdlib']});
  buildOld(join(img, 'opt', 'v1', 'libv.so'), ['-nostdlib']);
  mkdirSync(join(img, 'etc', 'alternatives'), {recursive: true});
  const alt = join(img, 'etc', 'alternatives', 'libv.so');
  symlinkSync('/opt/v2/libv.so', alt);
  mkdirSync(usrlib, {recursive: true});
  symlinkSync('/etc/alternatives/libv.so', join(usrlib, 'libv.so'));
  const app = buildLib({out: join(img, 'app', 'libuses.so'), link: [v2], source: USES, extra: ['-nostdlib']});
  unlinkSync(`${app}.c`);
  return {img, app, alt, cacheDir: join(tmp.dir, 'img-cache')};
}

const trees: Tree[] = [];
let img: ReturnType<typeof image>;
beforeAll(async () => {
  tmp = makeTempDir('cudaenv-report-memo-');
  for (let i = 0; i < 4; i++) trees.push(tree());
  img = image();
  // Results resting on files younger than SETTLE_MS are not kept.
  await new Promise((r) => setTimeout(r, SETTLE_MS + 200));
}, 120_000);
afterAll(() => tmp?.cleanup());

function input(targets: string[], cacheDir: string | undefined, env: NodeJS.ProcessEnv = {}): CheckCliInput {
  return {targets, ldLibraryPath: undefined, storeVersionsDir: join(tmp.dir, 'versions'), cacheDir, json: false, env};
}

/** What the same check says without any cache. */
async function uncached(targets: string[], env: NodeJS.ProcessEnv = {}) {
  const r = await runCheckCli(input(targets, undefined, env));
  return {text: r.text, exitCode: r.exitCode, warnings: r.warnings};
}

const reports = (cacheDir: string) => (existsSync(join(cacheDir, 'check', 'reports')) ? readdirSync(join(cacheDir, 'check', 'reports')) : []);
/** The verdict cache's own files: a check that reads no file leaves them as they were. */
const verdicts = (cacheDir: string) => readdirSync(join(cacheDir, 'check')).filter((n) => n.endsWith('.json'));

/** The one kept report under `checkDir` (a store's cache/check): its file and what it holds. */
function keptReport(checkDir: string): {file: string; data: Record<string, any>} {
  const [name] = readdirSync(join(checkDir, 'reports'));
  const file = join(checkDir, 'reports', name!);
  return {file, data: JSON.parse(readFileSync(file, 'utf8'))};
}

const MARK = 'from the kept report';
/** Marks the kept report's text, so that an answer from it shows; gives it back as marked. */
function markKept(checkDir: string): {file: string; data: Record<string, any>} {
  const kept = keptReport(checkDir);
  kept.data.answer.text = MARK;
  writeFileSync(kept.file, JSON.stringify(kept.data));
  return kept;
}

d('a plain check\'s text is kept with every fact it rests on', () => {
  test('an unchanged tree is answered from the kept text, without the verdicts; a rebuilt library is checked again', async () => {
    const t = trees[0];
    const cacheDir = join(t.cacheDir, 'check');
    const targets = [join(t.root, 'app')];
    const first = await runCheckText(input(targets, cacheDir));
    expect(first).toEqual(await uncached(targets));
    expect(first.exitCode).toBe(0);
    expect(reports(t.cacheDir)).toHaveLength(1);
    // Without the verdicts the check would have to read the files again, and would keep them anew.
    for (const f of verdicts(t.cacheDir)) unlinkSync(join(cacheDir, f));
    expect(await runCheckText(input(targets, cacheDir))).toEqual(first);
    expect(verdicts(t.cacheDir)).toEqual([]);
    // The same text, from the kept one, whatever it says: proven by marking it.
    markKept(cacheDir);
    expect((await runCheckText(input(targets, cacheDir))).text).toBe(MARK);
    // The library rebuilt without b@V2: the real loader fails, and so does the check.
    buildOld(join(t.newDir, 'libv.so'));
    expect(lddVerdict(t.app).versions).toEqual([`V2 ${t.app}`]);
    const after = await runCheckText(input(targets, cacheDir));
    expect(after).toEqual(await uncached(targets));
    expect(after.exitCode).toBe(1);
    expect(after.text).toContain('V2');
  });

  test('a library added to a checked directory is a new listing: checked, and counted', async () => {
    const t = trees[1];
    const cacheDir = join(t.cacheDir, 'check');
    const targets = [join(t.root, 'app')];
    const first = await runCheckText(input(targets, cacheDir));
    expect(first.text).toContain('all 1 library resolves');
    buildLib({out: join(t.root, 'app', 'libmore.so'), source: 'int more(void){return 3;}\n'});
    unlinkSync(join(t.root, 'app', 'libmore.so.c'));
    const after = await runCheckText(input(targets, cacheDir));
    expect(after).toEqual(await uncached(targets));
    expect(after.text).toContain('all 2 libraries resolve');
  });

  test('a link of a system image re-pointed to the old library: the image\'s directories no longer read the same', async () => {
    const env = {CUDAENV_SYSROOT: img.img};
    const targets = [img.app];
    const first = await runCheckText(input(targets, img.cacheDir, env));
    expect(first.exitCode).toBe(0);
    const {data} = keptReport(img.cacheDir);
    // The links of the image are told by its directories (src/core/elf/cache/link-proof.ts).
    expect(data.links.map(([dir]: [string]) => dir)).toEqual(expect.arrayContaining([join(img.img, 'etc', 'alternatives'), join(img.img, 'usr', 'lib', 'x86_64-linux-gnu')]));
    expect(await runCheckText(input(targets, img.cacheDir, env))).toEqual(first);
    unlinkSync(img.alt);
    symlinkSync('/opt/v1/libv.so', img.alt);
    const after = await runCheckText(input(targets, img.cacheDir, env));
    expect(after).toEqual(await uncached(targets, env));
    expect(after.exitCode).toBe(1);
    expect(after.text).toContain('V2');
  });

  test('a damaged kept report, or one of another request, build or listing, is no answer; a failing report is never kept', async () => {
    const t = trees[2];
    const cacheDir = join(t.cacheDir, 'check');
    const targets = [t.app];
    const first = await runCheckText(input(targets, cacheDir));
    // Each variant carries a marked text: given back, it would show.
    const {file, data: marked} = markKept(cacheDir);
    expect((await runCheckText(input(targets, cacheDir))).text).toBe(MARK);
    for (const damaged of ['{"format": 1, "facts": ', JSON.stringify({...marked, answer: {text: 1}}), JSON.stringify({...marked, facts: 'none'}),
      JSON.stringify({...marked, facts: [[1, 2]]}), JSON.stringify({...marked, format: 0}),
      // Another request hashing alike, another build of cudaenv, another listing or set of options.
      JSON.stringify({...marked, request: '{}'}), JSON.stringify({...marked, code: 'another build'}), JSON.stringify({...marked, key: '{}'})]) {
      writeFileSync(file, damaged);
      expect(await runCheckText(input(targets, cacheDir))).toEqual(first);
    }
    // Failing: nothing kept (its explanations look further afield than its facts).
    const u = trees[3];
    buildOld(join(u.newDir, 'libv.so'));
    await new Promise((r) => setTimeout(r, SETTLE_MS + 200));
    const failing = await runCheckText(input([u.app], join(u.cacheDir, 'check')));
    expect(failing.exitCode).toBe(1);
    expect(reports(u.cacheDir)).toEqual([]);
    rmSync(join(u.cacheDir), {recursive: true, force: true});
  });
});
