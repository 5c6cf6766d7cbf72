import {expect, test} from '@jest/globals';
import {formatBytes} from '../../../src/core/text/bytes.js';

test('byte counts as the install progress, `cache` and the action summary print them', () => {
  expect(formatBytes(0)).toBe('0 B');
  expect(formatBytes(512)).toBe('512 B');
  expect(formatBytes(1536)).toBe('1.5 KiB');
  expect(formatBytes(51184484)).toBe('48.8 MiB');
  expect(formatBytes(150 * 1024 * 1024)).toBe('150 MiB');
  expect(formatBytes(3.5 * 1024 ** 4)).toBe('3.5 TiB');
});
