import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {existsSync} from 'node:fs';
import {checkLibraries} from '../../../src/core/elf/check.js';
import {YOUNG_GROWTH} from '../../../src/core/heap-flags.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {testIf} from '../../helpers/skip.js';

/**
 * A check that reads files sizes V8's young generation for keeping what it reads (issue 43: a
 * dozen fewer scavenges in a first check); one the verdict cache answers leaves Node's sizing
 * alone (it would pay page faults for nothing). Watched by recording what the check asks of V8.
 */
const LIB = '/lib/x86_64-linux-gnu/libz.so.1';
const t = testIf(existsSync(LIB), `needs ${LIB} (apt-get install zlib1g)`);
const v8 = process.getBuiltinModule('node:v8');
const original = v8.setFlagsFromString;
const asked: string[] = [];
let tmp: {dir: string; cleanup: () => void};

beforeAll(() => {
  tmp = makeTempDir('cudaenv-young-');
  v8.setFlagsFromString = (flags: string) => {
    asked.push(flags);
    original(flags);
  };
});
afterAll(() => {
  v8.setFlagsFromString = original;
  tmp.cleanup();
});

t('a first check grows the young generation 16-fold, with a store or without; a cached one does not', async () => {
  const flag = `--semi-space-growth-factor=${YOUNG_GROWTH}`;
  asked.length = 0;
  await checkLibraries({targets: [LIB], ldLibraryPath: undefined});
  expect(asked).toContain(flag);
  asked.length = 0;
  const first = await checkLibraries({targets: [LIB], ldLibraryPath: undefined, cacheDir: tmp.dir});
  expect(asked).toEqual([flag]);
  asked.length = 0;
  const cached = await checkLibraries({targets: [LIB], ldLibraryPath: undefined, cacheDir: tmp.dir});
  expect(cached).toEqual(first);
  expect(asked).toEqual([]);
});
