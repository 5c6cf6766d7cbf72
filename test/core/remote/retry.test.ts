import {expect, test} from '@jest/globals';
import {retryAfterMs, transientStatus, waitBeforeRetry, waitTooLong} from '../../../src/core/remote/retry.js';

test('Retry-After: delay-seconds or an HTTP-date, anything else ignored; the wait is the longer of it and the back-off', () => {
  const now = Date.parse('Wed, 02 Dec 2026 15:00:00 GMT');
  expect(retryAfterMs('120', now)).toBe(120_000);
  expect(retryAfterMs(' 0 ', now)).toBe(0);
  expect(retryAfterMs('Wed, 02 Dec 2026 15:00:30 GMT', now)).toBe(30_000);
  expect(retryAfterMs('Wed, 02 Dec 2026 14:00:00 GMT', now)).toBe(0); // already past
  expect([retryAfterMs(undefined, now), retryAfterMs('', now), retryAfterMs('soon', now), retryAfterMs('-5', now)]).toEqual([undefined, undefined, undefined, undefined]);
  expect(waitBeforeRetry(0, 30_000)).toBe(30_000);
  expect(waitBeforeRetry(0, undefined)).toBeGreaterThan(0);
  expect([408, 429, 500, 503].map(transientStatus)).toEqual([true, true, true, true]);
  expect([400, 401, 403, 404, 416].map(transientStatus)).toEqual([false, false, false, false, false]);
  expect(waitTooLong('http://m/x.json', 429, 90 * 60_000, now).hint).toContain('Run the command again after 2026-12-02T16:30:00Z');
});
