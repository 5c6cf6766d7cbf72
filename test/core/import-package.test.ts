import {afterEach, expect, test} from '@jest/globals';
import {importPackage} from '../../src/core/import-package.js';

// bin/run.cjs hands the bundle its own import() (a script compiled with kept code has none): used
// when given, the caller's own import() otherwise; both load the real package.
const HOOK = Symbol.for('cudaenv.importPackage');
afterEach(() => {
  delete (globalThis as Record<symbol, unknown>)[HOOK];
});

test('without the launcher\'s function, the caller\'s own import() loads the package', async () => {
  const {default: Conf} = await importPackage('conf', () => import('conf'));
  expect(typeof Conf).toBe('function');
});

test('with it, the package comes through that function, and the caller\'s import() is not run', async () => {
  const asked: string[] = [];
  (globalThis as Record<symbol, unknown>)[HOOK] = (name: string) => {
    asked.push(name);
    return import(name);
  };
  const {default: Conf} = await importPackage('conf', () => Promise.reject(new Error('the caller\'s import() ran')));
  expect(typeof Conf).toBe('function');
  expect(asked).toEqual(['conf']);
});
