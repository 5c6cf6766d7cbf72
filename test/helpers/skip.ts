/**
 * Tests that cannot run on this machine are skipped *with their reason in their name*, so the
 * summary reporter (test/helpers/summary-reporter.cjs) can list every skipped test and why.
 * Never `return` early from a test body when something is missing: that counts as a pass.
 *
 *   const t = testIf(haveGcc, 'needs gcc (apt-get install gcc)');
 *   t('builds a library', async () => { ... });
 */
import {describe, test} from '@jest/globals';

type TestFn = typeof test;
type DescribeFn = typeof describe;

export function testIf(cond: boolean, reason: string): TestFn {
  if (cond) return test;
  const skipped = ((name: string, fn?: unknown, timeout?: number) =>
    test.skip(`${name} [skipped: ${reason}]`, fn as never, timeout)) as unknown as TestFn;
  // test.each keeps working: testIf(cond, why).each(table)(name, fn)
  (skipped as {each: unknown}).each = (table: never) => (name: string, fn: never, timeout?: number) =>
    test.skip.each(table)(`${name} [skipped: ${reason}]`, fn, timeout);
  return skipped;
}

export function describeIf(cond: boolean, reason: string): DescribeFn {
  if (cond) return describe;
  const skipped = ((name: string, fn: () => void) =>
    describe.skip(`${name} [skipped: ${reason}]`, fn)) as unknown as DescribeFn;
  (skipped as {each: unknown}).each = (table: never) => (name: string, fn: never) =>
    describe.skip.each(table)(`${name} [skipped: ${reason}]`, fn);
  return skipped;
}
