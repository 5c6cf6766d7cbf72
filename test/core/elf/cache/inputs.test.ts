import {expect, test} from '@jest/globals';
import {statSync} from 'node:fs';
import {InputRecorder} from '../../../../src/core/elf/cache/inputs.js';

/**
 * Capture and replay (src/core/elf/cache/inputs.ts): an answer computed while one file was checked
 * and reused for another must leave in the other's record what computing it would have recorded.
 */
test('facts replayed into another file\'s record are those its own computation would record, newest time and devices included', () => {
  const here = statSync(import.meta.dirname);
  const computed = new InputRecorder();
  computed.begin();
  computed.fact('w', '', '/cwd');
  const done = computed.capture();
  computed.stat('/a', here);
  const inner = computed.capture();
  computed.stat('/missing', null);
  expect(inner()).toHaveLength(1);
  computed.fact('h', '/img/x', '/img/y');
  const facts = done();
  // The inner capture's facts went to the outer one as well, in order.
  expect(facts.map((f) => f[0])).toEqual(['s\0/a', 's\0/missing', 'h\0/img/x']);
  const own = computed.end();

  const reused = new InputRecorder();
  reused.begin();
  reused.fact('w', '', '/cwd');
  reused.replay(facts);
  const other = reused.end();
  expect([...other.values]).toEqual([...own.values]);
  expect(other.newest).toBe(own.newest);
  expect([...other.devices]).toEqual([...own.devices]);
  expect(other.newest).toBe(Math.max(here.mtimeMs, here.ctimeMs));
});
