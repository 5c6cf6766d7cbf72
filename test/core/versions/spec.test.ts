import {describe, expect, test} from '@jest/globals';
import {highestMatch, parseSpec, prefixedVersion, tryParseSpec, validateAliasName} from '../../../src/core/versions/spec.js';
import {compareVersions, parseVersion, sortVersionLabels} from '../../../src/core/versions/version.js';

describe('versions and specs', () => {
  test('version labels parse strictly', () => {
    expect(parseVersion('12.4.1')).toEqual({major: 12, minor: 4, patch: 1});
    for (const bad of ['12.4', '12.4.1.2', 'v12.4.1', '012.4.1', '12.4.1 ', '12.x.1', '']) expect(parseVersion(bad)).toBeUndefined();
  });

  test('versions order numerically, not as text', () => {
    expect(sortVersionLabels(['12.10.0', '12.4.1', '11.8.0', '12.4.10', '12.4.2'])).toEqual(['11.8.0', '12.4.1', '12.4.2', '12.4.10', '12.10.0']);
    expect(compareVersions(parseVersion('12.10.0')!, parseVersion('12.9.9')!)).toBeGreaterThan(0);
  });

  test.each([
    ['12', 'version'], ['12.4', 'version'], ['12.4.1', 'version'], ['latest', 'latest'], ['system', 'system'], ['stable', 'alias'],
  ])('%s is a %s spec', (text, kind) => {
    expect(tryParseSpec(text)?.kind).toBe(kind);
  });

  test.each(['12.4.1.1', '$(rm -rf ~)', '`id`', '12.4; ls', '../12', 'a b', '', '-1', '12.'])('%j is not a spec', (text) => {
    expect(tryParseSpec(text)).toBeUndefined();
    expect(() => parseSpec(text)).toThrow(/is not a CUDA version spec/);
  });

  test('a spec resolves to the highest matching label', () => {
    const labels = ['11.8.0', '12.3.2', '12.4.0', '12.4.1', '12.10.0'];
    expect(highestMatch(parseSpec('12'), labels)).toBe('12.10.0');
    expect(highestMatch(parseSpec('12.4'), labels)).toBe('12.4.1');
    expect(highestMatch(parseSpec('12.4.0'), labels)).toBe('12.4.0');
    expect(highestMatch(parseSpec('latest'), labels)).toBe('12.10.0');
    expect(highestMatch(parseSpec('12.5'), labels)).toBeUndefined();
    expect(highestMatch(parseSpec('1'), labels)).toBeUndefined();
  });

  test('a version written with nvm\'s v or a toolkit directory\'s cuda- prefix is recognised (for the hint), not parsed as a version', () => {
    for (const [text, bare] of [['v12.4', '12.4'], ['V12', '12'], ['cuda-12.4.1', '12.4.1'], ['CUDA_12', '12'], ['cuda12.4', '12.4'], ['Cuda-11.8', '11.8']]) {
      expect(prefixedVersion(text)).toBe(bare);
      expect(tryParseSpec(text)?.kind).toBe('alias');
    }
    for (const text of ['vfoo', 'v', 'cuda-', 'cuda-12.4.1.2', 'v012', 'v12.', 'stable', '12.4', 'xv12', 'cuda--12']) expect(prefixedVersion(text)).toBeUndefined();
  });

  test('alias names may not shadow specs', () => {
    for (const bad of ['latest', 'system', '12', '12.4', 'a/b', '.hidden', '']) expect(() => validateAliasName(bad)).toThrow(/not allowed/);
    expect(() => validateAliasName('stable')).not.toThrow();
  });
});
