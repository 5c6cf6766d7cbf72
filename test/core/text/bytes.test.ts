import {expect, test} from '@jest/globals';
import {formatBytes, formatRate} from '../../../src/core/text/bytes.js';

test('byte counts as the install progress, `cache` and the action summary print them', () => {
  expect(formatBytes(0)).toBe('0 B');
  expect(formatBytes(512)).toBe('512 B');
  expect(formatBytes(1536)).toBe('1.5 KiB');
  expect(formatBytes(51184484)).toBe('48.8 MiB');
  expect(formatBytes(150 * 1024 * 1024)).toBe('150 MiB');
  expect(formatBytes(3.5 * 1024 ** 4)).toBe('3.5 TiB');
});

test('rates and other fractional amounts at the same precision (issue 44 item 9: 99.08654590493884 B/s was printed)', () => {
  expect(formatBytes(99.08654590493884)).toBe('99 B');
  expect(formatRate(99.08654590493884)).toBe('99 B/s');
  expect(formatRate(0.4)).toBe('0 B/s');
  expect(formatBytes(1023.6)).toBe('1.0 KiB'); // rounds up into the next unit, never "1024 B"
  expect(formatBytes(1024 * 1023.97)).toBe('1.0 MiB');
  expect(formatBytes(1024 * 99.96)).toBe('100 KiB');
  expect(formatRate(1536.123456)).toBe('1.5 KiB/s');
  expect(formatBytes(Number.NaN)).toBe('0 B');
});
