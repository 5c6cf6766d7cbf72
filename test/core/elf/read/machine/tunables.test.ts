import {expect, test} from '@jest/globals';
import {tunableInEffect, tunableSettings} from '../../../../../src/core/elf/read/machine/tunables.js';

// The rules themselves are checked against real loaders in loader-glibc-releases.test.ts; these
// pin the parsing down where no loader is at hand.

test('settings are read as strtoul reads them (base 0, blanks first), a setting that is no number as null', () => {
  const name = 'glibc.rtld.dynamic_sort';
  expect(tunableSettings(`${name}=1:glibc.malloc.check=3:${name}=0x2:${name}=010:${name}= 2:${name}=2x:${name}=-1:${name}=`, name))
    .toEqual([1, 2, 8, 2, null, null, null]);
  expect(tunableSettings('glibc.rtld.dynamic_sort', 'glibc.rtld.dynamic_sort')).toEqual([]);
  expect(tunableSettings(undefined, 'glibc.rtld.dynamic_sort')).toEqual([]);
  // Another tunable whose name starts the same is another tunable.
  expect(tunableSettings('glibc.rtld.dynamic_sort_x=1', 'glibc.rtld.dynamic_sort')).toEqual([]);
});

test('up to 2.39 the last valid setting counts; from 2.41 the last setting, or the default when it is invalid', () => {
  const name = 'glibc.rtld.dynamic_sort';
  const valid = (n: number) => n === 1 || n === 2;
  const at = (tunables: string, glibc: [number, number] | null) => tunableInEffect(tunables, name, valid, glibc);
  const tunables = `${name}=1:${name}=9`;
  expect([at(tunables, [2, 36]), at(tunables, [2, 39]), at(tunables, [2, 40])]).toEqual([1, 1, 1]);
  expect([at(tunables, [2, 41]), at(tunables, [2, 43]), at(tunables, null)]).toEqual([null, null, null]);
  expect([at(`${name}=9:${name}=1`, [2, 36]), at(`${name}=9:${name}=1`, [2, 43])]).toEqual([1, 1]);
  expect([at(`${name}=x`, [2, 36]), at(`${name}=2`, [2, 43]), at('', [2, 43])]).toEqual([null, 2, null]);
});
