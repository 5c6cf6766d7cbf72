import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {execFileSync, spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, cliEnv, runCli} from '../../../helpers/cli.js';
import {makeTempDir} from '../../../helpers/tmp.js';
import {testIf} from '../../../helpers/skip.js';
import {CAN_PTRACE, NEEDS} from '../../../helpers/capabilities.js';
import {SETTLE_MS} from '../../../../src/core/elf/cache/verdict-cache.js';
import {LoaderFactsFile} from '../../../../src/core/elf/cache/loader-facts.js';
import {hostLoaderFacts} from '../../../../src/core/elf/read/ldcache/host-loader.js';
import {buildLib, HAVE_GCC, HAVE_LDD, lddVerdict} from '../fixtures.js';

/**
 * What a cached check does not do (issue 37): a check of files whose identity and environment are
 * unchanged reads no symbol table and starts no process (the loader's facts are kept under its
 * own identity), and the working directory counts only where a relative path makes it matter.
 * Watched with strace: the processes the CLI starts and the files it opens.
 */
const d = testIf(HAVE_GCC && HAVE_LDD, 'needs gcc and ldd');
const traced = testIf(HAVE_GCC && HAVE_LDD && CAN_PTRACE, `needs gcc and ldd; ${NEEDS.ptrace}`);
const HOST_LOADER = '/lib64/ld-linux-x86-64.so.2';

let tmp: {dir: string; cleanup: () => void};
let fx: {lib: string; dep: string; dir: string; exe: string; rel: string; withSub: string; withoutSub: string; store: string};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  tmp = makeTempDir('cudaenv-cached-work-');
  const root = tmp.dir;
  const dep = buildLib({out: join(root, 'deps', 'libv.so'), soname: 'libv.so', source: 'int v(void){return 1;}\n', versionScript: 'V1 { global: v; local: *; };\n'});
  const lib = buildLib({out: join(root, 'lib', 'libuses.so'), link: [dep], runpath: join(root, 'deps'), source: 'int v(void); int u(void){return v();}\n'});
  buildLib({out: join(root, 'lib', 'libother.so'), source: 'int o(void){return 2;}\n'});
  const exe = buildLib({out: join(root, 'bin', 'prog'), executable: true, source: 'int main(void){return 0;}\n'});
  // DT_RUNPATH "sub": relative, so the working directory decides what it finds.
  const rel = buildLib({out: join(root, 'rel', 'librel.so'), link: [dep], runpath: 'sub', source: 'int v(void); int r(void){return v();}\n'});
  const withSub = join(root, 'cwd-with');
  mkdirSync(join(withSub, 'sub'), {recursive: true});
  copyFileSync(dep, join(withSub, 'sub', 'libv.so'));
  const withoutSub = join(root, 'cwd-without');
  mkdirSync(withoutSub);
  // Results resting on files younger than SETTLE_MS are not cached.
  await sleep(SETTLE_MS + 200);
  fx = {lib, dep, dir: join(root, 'lib'), exe, rel, withSub, withoutSub, store: join(root, 'store')};
}, 120_000);
afterAll(() => tmp?.cleanup());

interface Trace {
  stdout: string;
  status: number;
  /** Programs started after Node itself. */
  started: string[];
  /** Files opened successfully. */
  opened: string[];
}

/** The CLI under strace -f: what it printed, started and opened. */
function traceCli(args: string[], cwd: string, store = fx.store): Trace {
  const log = join(tmp.dir, `strace-${Date.now()}-${Math.random()}.log`);
  const r = spawnSync('strace', ['-f', '-qq', '-e', 'trace=execve,open,openat', '-o', log, process.execPath, CLI, ...args], {
    cwd, env: cliEnv(store), encoding: 'utf8', timeout: 120_000,
  });
  const lines = readFileSync(log, 'utf8').split('\n');
  const execs = lines.filter((l) => /execve\(/.test(l) && !/= -1 /.test(l));
  // From Node's reading of the CLI's entry on: before it, ld.so opened what Node itself needs (its ld.so.cache too).
  const start = lines.findIndex((l) => l.includes(CLI) && /open(at)?\(/.test(l));
  const opened = lines.slice(start).flatMap((l) => {
    const m = /open(?:at)?\((?:AT_FDCWD, )?"([^"]+)"/.exec(l);
    return m && !/= -1 /.test(l) ? [m[1]] : [];
  });
  return {stdout: r.stdout, status: r.status ?? 1, started: execs.slice(1).map((l) => /execve\("([^"]+)"/.exec(l)?.[1] ?? l), opened};
}

const inode = (p: string): string => {
  const st = statSync(p);
  return `${st.dev}:${st.ino}`;
};
/** Which of `files` were opened (by inode: the check opens a file by whichever path its search gave). */
function openedOf(t: Trace, files: string[]): string[] {
  const wanted = new Map(files.map((f) => [inode(f), f]));
  return [...new Set(t.opened.filter((p) => existsSync(p) && wanted.has(inode(p))).map((p) => wanted.get(inode(p))!))];
}

/**
 * The machine state a cached verdict rests on besides the files checked: the noexec mount points
 * (part of the key) and the identities of ld.so.cache and the loader. Tests running beside this one
 * change it (noexec-mount.test.ts mounts a noexec tmpfs in this mount namespace), which rightly makes
 * the next check a fresh one: `undisturbed` runs `runs` again (up to 5 times) until the state held.
 */
function machineState(): string {
  const noexec = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => /\bnoexec\b/.test(l)).map((l) => l.split(' ')[4]).sort();
  const id = (p: string) => {
    try {
      const st = statSync(p);
      return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    } catch {
      return '-';
    }
  };
  return JSON.stringify([noexec, id('/etc/ld.so.cache'), id(HOST_LOADER), id('/etc/ld.so.preload')]);
}
function undisturbed<T>(runs: () => T): T {
  for (let attempt = 1; ; attempt++) {
    const before = machineState();
    const result = runs();
    if (machineState() === before || attempt === 5) return result;
  }
}

traced('the cached check of an unchanged tree starts no process and opens no checked library, dependency, ld.so.cache or --exe program', () => {
  const args = ['check', fx.lib, fx.dir, '--exe', fx.exe];
  const watched = [fx.lib, fx.dep, fx.exe, '/etc/ld.so.cache', join(fx.dir, 'libother.so')];
  // Uncached, the same trace sees the tables read (what makes this test able to fail).
  const cold = traceCli(['check', '--no-cache', fx.lib, fx.dir, '--exe', fx.exe], tmp.dir, join(tmp.dir, 'unused-store'));
  expect(cold.status).toBe(0);
  expect(openedOf(cold, watched).sort()).toEqual(watched.sort());
  // Without a store the loader is asked once (in the background, while the targets are listed).
  expect(cold.started.filter((p) => /ld-linux/.test(p))).toHaveLength(1);
  const first = traceCli(args, tmp.dir);
  expect(first.status).toBe(0);
  expect(first.started.some((p) => /ld-linux/.test(p))).toBe(true); // the loader asked once, its facts kept
  // A check under the same machine state as the one watched (a no-op when nothing beside this test changed it).
  const again = undisturbed(() => [traceCli(args, tmp.dir), traceCli(args, tmp.dir)][1]!);
  expect(again.status).toBe(0);
  expect(again.stdout).toBe(first.stdout);
  expect(again.stdout).toBe(cold.stdout);
  expect(again.started).toEqual([]);
  expect(openedOf(again, watched)).toEqual([]);
  // The loader's facts are kept under its own path.
  expect(readdirSync(join(fx.store, 'cache', 'check', 'loader'))).toContain('lib64_ld-linux-x86-64.so.2.json');
}, 120_000);

traced('the same check from another working directory is answered from the cache', () => {
  const args = ['check', fx.lib];
  const [first, elsewhere] = undisturbed(() => [traceCli(args, tmp.dir), traceCli(args, fx.withoutSub)]);
  expect(elsewhere.stdout).toBe(first.stdout);
  expect(elsewhere.started).toEqual([]);
  expect(openedOf(elsewhere, [fx.lib, fx.dep])).toEqual([]);
}, 120_000);

traced('a relative DT_RUNPATH makes the working directory count: the check from each directory says what ldd -r says there', () => {
  expect(lddVerdict(fx.rel, undefined, fx.withSub).libs).toContain(`libv.so => sub/libv.so`);
  expect(lddVerdict(fx.rel, undefined, fx.withoutSub).libs).toContain('libv.so => not found');
  const [found, cached] = undisturbed(() => [traceCli(['check', fx.rel], fx.withSub), traceCli(['check', fx.rel], fx.withSub)]);
  expect(found.status).toBe(0);
  expect(openedOf(cached, [fx.rel])).toEqual([]);
  // From a directory without sub/: checked again, and libv.so is not found, as ld.so says.
  const missing = traceCli(['check', fx.rel], fx.withoutSub);
  expect(missing.status).toBe(1);
  expect(missing.stdout).toMatch(/needs libv\.so, which the loader cannot find/);
  expect(openedOf(missing, [fx.rel])).toEqual([fx.rel]);
}, 120_000);

d('a relative LD_LIBRARY_PATH entry makes the working directory count', () => {
  const store = join(tmp.dir, 'store-llp');
  const lib = buildLib({out: join(tmp.dir, 'llp', 'libneeds.so'), link: [fx.dep], source: 'int v(void); int n(void){return v();}\n'});
  expect(lddVerdict(lib, 'sub', fx.withSub).libs).toContain('libv.so => sub/libv.so');
  expect(lddVerdict(lib, 'sub', fx.withoutSub).libs).toContain('libv.so => not found');
  const run = (cwd: string) => {
    const r = runCli(['check', '--ld-library-path', 'sub', lib], {cwd, env: cliEnv(store)});
    return `${r.status} ${r.stdout.split('\n').at(-2)}`;
  };
  expect(run(fx.withSub)).toBe('0 all 1 library resolves');
  expect(run(fx.withoutSub)).toMatch(/^1 libneeds\.so needs libv\.so, which the loader cannot find/);
  expect(run(fx.withSub)).toBe('0 all 1 library resolves');
}, 120_000);

d('the loader facts are kept under the loader\'s identity and asked again when it, or GLIBC_TUNABLES, changes', async () => {
  // A copy of the host's loader, settled, stands for it (the real one is not to be replaced).
  const loader = join(tmp.dir, 'loader', 'ld.so');
  mkdirSync(join(tmp.dir, 'loader'));
  copyFileSync(HOST_LOADER, loader);
  const dir = join(tmp.dir, 'facts');
  // A loader changed within the settling time is not kept (its identity could still change unseen).
  const store = new LoaderFactsFile(dir);
  store.set(loader, {hwcaps: ['x'], hwcapsKnown: ['x'], legacy: [], platform: null, hwcapImportant: null, platformBit: null, isa1: null});
  expect(store.get(loader)).toBeUndefined();
  await sleep(SETTLE_MS + 200);
  // Asked once (the store was empty), kept, and then answered from the store by a new process's store.
  const asked = hostLoaderFacts(loader, new LoaderFactsFile(dir));
  expect(asked).not.toBeNull();
  expect(asked!.hwcapsKnown.length).toBeGreaterThan(0);
  expect(new LoaderFactsFile(dir).get(loader)).toEqual(asked);
  // GLIBC_TUNABLES is the loader's environment too: another value, another answer.
  const saved = process.env.GLIBC_TUNABLES;
  process.env.GLIBC_TUNABLES = 'glibc.cpu.hwcaps=-AVX2';
  try {
    expect(new LoaderFactsFile(dir).get(loader)).toBeUndefined();
  } finally {
    if (saved === undefined) delete process.env.GLIBC_TUNABLES;
    else process.env.GLIBC_TUNABLES = saved;
  }
  // The loader replaced (a glibc upgrade): another identity, so it is asked again.
  copyFileSync(HOST_LOADER, `${loader}.new`);
  execFileSync('mv', [`${loader}.new`, loader]);
  await sleep(SETTLE_MS + 200);
  expect(new LoaderFactsFile(dir).get(loader)).toBeUndefined();
  // A damaged store file is a miss, never an error.
  const file = join(dir, 'loader', readdirSync(join(dir, 'loader'))[0]);
  writeFileSync(file, '{"interp":');
  expect(new LoaderFactsFile(dir).get(loader)).toBeUndefined();
}, 60_000);
