/**
 * The switch as a pure function (used by `use` to check under the coming LD_LIBRARY_PATH)
 * against the shells' own _cudaenv_switch: same inputs, same resulting environment.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {planSwitch, prependEntry, removeEntry} from '../../../src/core/shell/transition.js';
import {CLI, cliEnv} from '../../helpers/cli.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {have, makeStore, readSnapshot, TRACKED} from './shell-harness.js';

describe('colon lists', () => {
  test.each([
    ['/a:/b', '/a', '/b'], ['/b:/a', '/a', '/b'], ['/b:/a:/c', '/a', '/b:/c'], ['/a', '/a', ''],
    ['/a:', '/a', ''], [':/a', '/a', ''], ['/b', '/a', '/b'], ['/a:/a', '/a', '/a'], ['/ab:/a', '/a', '/ab'],
    ['/x::/y', '/x', ':/y'], ['', '/a', ''], ['/a:/b', '', '/a:/b'],
  ])('removeEntry(%j, %j) = %j', (value, entry, out) => {
    expect(removeEntry(value, entry)).toBe(out);
  });
  test('prepending to an empty list adds no empty entry (that would mean the current directory)', () => {
    expect(prependEntry('', '/v/bin')).toBe('/v/bin');
    expect(prependEntry(':', '/v/bin')).toBe('/v/bin::');
  });
});

const shells = (['bash', 'zsh', 'fish'] as const).filter(have);

describe('planSwitch agrees with the shells', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-transition-');
    store = join(tmp.dir, 'st ore');
    await makeStore(store, ['11.8.0', '12.4.1']);
  });
  afterAll(() => tmp.cleanup());

  const starts: Array<[string, NodeJS.ProcessEnv]> = [
    ['LD unset', {}],
    ['LD empty', {LD_LIBRARY_PATH: ''}],
    ['LD set with an empty entry', {LD_LIBRARY_PATH: '/opt/x::/opt/y', CUDA_HOME: '/usr/local/cuda', CUDAENV_VERSION: '12'}],
  ];
  const steps: Array<[string, 'prepend' | 'none', 'pin' | 'restore' | 'keep']> = [
    ['12.4.1', 'prepend', 'pin'], ['11.8.0', 'none', 'restore'], ['12.4.1', 'prepend', 'keep'], ['system', 'none', 'pin'],
  ];

  for (const shell of shells) {
    test.each(starts)(`${shell}: %s`, (_name, start) => {
      let expected: NodeJS.ProcessEnv = {PATH: '/usr/bin:/bin', ...start};
      const lines: string[] = [];
      for (const [i, [label, policy, mode]] of steps.entries()) {
        expected = planSwitch(expected, store, label, policy, mode);
        lines.push(`_cudaenv_switch ${label} ${policy} ${mode}`, `env -0 > '${tmp.dir}/${shell}-${_name}-${i}'`);
      }
      const init = shell === 'fish'
        ? `${process.execPath} ${CLI} init fish | source`
        : `eval "$(${process.execPath} ${CLI} init ${shell})"`;
      const env = cliEnv(store, {PATH: '/usr/bin:/bin', HOME: tmp.dir});
      for (const v of TRACKED) delete env[v];
      Object.assign(env, {PATH: '/usr/bin:/bin'}, start);
      const r = spawnSync(shell, ['-c', [init, ...lines].join('\n')], {env, encoding: 'utf8'});
      expect(r.stderr).toBe('');
      // Replay: each snapshot must equal the plan after the same number of steps.
      let plan: NodeJS.ProcessEnv = {PATH: '/usr/bin:/bin', ...start};
      for (const [i, [label, policy, mode]] of steps.entries()) {
        plan = planSwitch(plan, store, label, policy, mode);
        const snap = readSnapshot(join(tmp.dir, `${shell}-${_name}-${i}`));
        for (const key of [...TRACKED, '_CUDAENV_PATH_ADDED', '_CUDAENV_LD_LIBRARY_PATH_ADDED', '_CUDAENV_APPLIED']) {
          expect([i, key, snap.get(key)]).toEqual([i, key, plan[key]]);
        }
      }
      expect(plan).toEqual(expected);
    });
  }
});
