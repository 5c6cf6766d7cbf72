import {afterAll, beforeAll, expect} from '@jest/globals';
import {chmodSync, existsSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {hostLoaderFacts, loaderFactsSettled, prefetchHostLoaderFacts} from '../../../../../src/core/elf/read/ldcache/host-loader.js';
import {makeTempDir} from '../../../../helpers/tmp.js';
import {testIf} from '../../../../helpers/skip.js';

/**
 * A first check asks the host's loader in the background while it lists its targets (issue 43):
 * the answer is the one asking it directly gives, and the loader runs once. The real loader
 * answers, behind a wrapper that counts its runs.
 */
const HOST_LOADER = '/lib64/ld-linux-x86-64.so.2';
const t = testIf(process.arch === 'x64' && existsSync(HOST_LOADER), `needs the x86-64 loader ${HOST_LOADER}`);

let tmp: {dir: string; cleanup: () => void};
beforeAll(() => {
  tmp = makeTempDir('cudaenv-prefetch-');
});
afterAll(() => tmp.cleanup());

function countingLoader(name: string): {path: string; runs: () => string[]} {
  const log = join(tmp.dir, `${name}.log`);
  const path = join(tmp.dir, name);
  writeFileSync(path, `#!/bin/sh\necho "$@" >> '${log}'\nexec ${HOST_LOADER} "$@"\n`);
  chmodSync(path, 0o755);
  return {path, runs: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [])};
}

t('the prefetched answer is the direct one, and the loader runs once', async () => {
  const direct = countingLoader('direct');
  const expected = hostLoaderFacts(direct.path);
  expect(expected).not.toBeNull();
  const early = countingLoader('early');
  prefetchHostLoaderFacts(early.path);
  prefetchHostLoaderFacts(early.path); // a second call while the first is pending starts nothing
  await loaderFactsSettled();
  expect(early.runs()).toEqual(['--list-diagnostics']);
  expect(hostLoaderFacts(early.path)).toEqual(expected);
  expect(early.runs()).toEqual(['--list-diagnostics']);
});

t('asked before the background answer came, the loader is asked directly, as before', async () => {
  const late = countingLoader('late');
  prefetchHostLoaderFacts(late.path);
  const facts = hostLoaderFacts(late.path);
  await loaderFactsSettled();
  expect(facts).toEqual(hostLoaderFacts(HOST_LOADER));
  expect(late.runs().every((r) => r === '--list-diagnostics')).toBe(true);
});
