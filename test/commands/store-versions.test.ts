import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {mkdirSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir, type TempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';

/** Issue 44: an empty versions/X is not an installed version; uninstalling the version this shell uses says so. */
let tmp: TempDir;
let store: string;
beforeEach(() => {
  tmp = makeTempDir('cudaenv-store-versions-');
  store = join(tmp.dir, 'store');
  expect(runCli(['add', makeFakeToolkit(join(tmp.dir, 'tk124'), {version: '12.4.1'})], {env: cliEnv(store)}).status).toBe(0);
});
afterEach(() => tmp.cleanup());

describe('an empty directory in versions/', () => {
  test('is no installed version: ls says so with the fix, `12` selects the real one, and naming it says not installed', () => {
    mkdirSync(join(store, 'versions', '12.6.0'));
    const env = cliEnv(store);
    const ls = runCli(['ls'], {env});
    expect(ls.stdout).toMatch(/ {2}12\.6\.0 +\(not a toolkit: empty, no bin\/ or lib\) remove it: cudaenv uninstall 12\.6\.0/);
    expect(JSON.parse(runCli(['ls', '--json'], {env}).stdout).versions.find((v: {version: string}) => v.version === '12.6.0')).toMatchObject({broken: true});
    const current = runCli(['current'], {env: {...env, CUDAENV_VERSION: '12'}});
    expect(current.stdout).toContain('12.4.1');
    const named = runCli(['current'], {env: {...env, CUDAENV_VERSION: '12.6.0'}});
    expect(named.status).toBe(1);
    // uninstall removes it.
    expect(runCli(['uninstall', '12.6.0'], {env}).status).toBe(0);
    expect(runCli(['ls', '--json'], {env}).stdout).not.toContain('12.6.0');
  });
});

describe('uninstalling the version this shell uses', () => {
  const warning = 'this shell uses CUDA 12.4.1';
  test.each([
    ['CUDAENV_VERSION (cudaenv use 12.4)', {CUDAENV_VERSION: '12.4'}],
    ['CUDA_HOME into the version (an auto-switch)', {CUDA_HOME: 'STORE/versions/12.4.1', _CUDAENV_APPLIED: '12.4.1'}],
  ])('%s: a warning names it and what the next prompt does', (_name, extra) => {
    const env = cliEnv(store, Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, v.replace('STORE', store)])));
    const r = runCli(['uninstall', '12.4.1'], {env});
    expect(r.status).toBe(0);
    expect(r.stderr).toContain(`cudaenv: warning: ${warning}`);
    expect(r.stderr).toContain('until its next prompt, which falls back to what is selected here');
  });

  test('a shell that uses another version or none: no such warning', () => {
    const r = runCli(['uninstall', '12.4.1'], {env: cliEnv(store)});
    expect(r.status).toBe(0);
    expect(r.stderr).not.toContain(warning);
  });
});
