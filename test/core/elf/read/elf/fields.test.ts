import {describe, expect, test} from '@jest/globals';
import {Fields} from '../../../../../src/core/elf/read/elf/fields.js';

/** The 64-bit fields are read as two 32-bit halves (no BigInt): the same numbers as a BigInt read gives. */
const viaBigInt = (v: bigint): number => (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER) ? Number.NaN : Number(v));

describe('Fields 64-bit reads', () => {
  const edges = [0n, 1n, -1n, 2n ** 32n - 1n, 2n ** 32n, -(2n ** 32n), 2n ** 53n - 1n, 2n ** 53n, -(2n ** 53n) + 1n, -(2n ** 53n),
    -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n), 0x6ffffef5n, 0x7fffffffn, 12345678901234n, -12345678901234n];
  let seed = 7;
  const rand32 = (): bigint => BigInt((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0));
  const values = [...edges];
  for (let i = 0; i < 500; i++) {
    values.push(BigInt.asIntN(64, (rand32() << 32n) | rand32()));
    // High halves near the safe-integer boundary.
    values.push(BigInt.asIntN(64, ((BigInt(Number(rand32() % 8n)) - 4n + 0x200000n) << 32n) | rand32()));
    values.push(BigInt.asIntN(64, ((BigInt(Number(rand32() % 8n)) - 4n - 0x200000n) << 32n) | rand32()));
  }

  test.each([true, false])('little-endian %s: i64 and u64 equal the BigInt reads', (le) => {
    const buf = Buffer.alloc(16);
    const f = new Fields(buf, le, true);
    for (const v of values) {
      if (le) buf.writeBigInt64LE(v, 8);
      else buf.writeBigInt64BE(v, 8);
      expect([v, f.i64(8)]).toEqual([v, viaBigInt(v)]);
      expect([v, f.u64(8)]).toEqual([v, viaBigInt(BigInt.asUintN(64, v))]);
    }
  });
});
