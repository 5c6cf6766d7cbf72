import {describe, expect, test} from '@jest/globals';
import {highestMatch, parseSpec, prefixedVersion, tryParseSpec, validateAliasName} from '../../../src/core/versions/spec.js';
import {parseVersionFileText} from '../../../src/core/versions/version-file.js';
import {compareVersions, isLabel, parseVersion, sortVersionLabels} from '../../../src/core/versions/version.js';

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

describe('suffixed labels (a second toolkit of a release: cudaenv add DIR --as 12.4.1-local)', () => {
  test('a label is a release with a lowercase suffix; anything else is refused', () => {
    for (const good of ['12.4.1-local', '12.4.1-a', '0.0.0-x9', `12.4.1-${'a'.repeat(16)}`]) expect([good, isLabel(good)]).toEqual([good, true]);
    for (const bad of ['12.4.1-Local', '12.4.1-', '12.4.1-a/b', '12.4.1-../x', '12.4.1-1a', '12.4.1-a-b', '12.4-local', '12-local',
      `12.4.1-${'a'.repeat(17)}`, '12.4.1-a\nb', '12.4.1-a ', '012.4.1-a', '12.4.1-a\u00e9', '..', '12.4.1-a.b']) {
      expect([bad, isLabel(bad)]).toEqual([bad, false]);
      expect([bad, tryParseSpec(bad)?.kind]).not.toEqual([bad, 'label']);
    }
    expect(isLabel('12.4.1')).toBe(true);
    expect(parseVersion('12.4.1-local')).toBeUndefined();
  });

  test('a label spec selects that exact label; releases, partial specs and latest never select it', () => {
    expect(tryParseSpec('12.4.1-local')).toEqual({kind: 'label', text: '12.4.1-local', release: '12.4.1', suffix: 'local'});
    const labels = ['12.4.1', '12.4.1-local', '12.3.0', '12.9.9-zz'];
    expect(highestMatch(parseSpec('12.4.1-local'), labels)).toBe('12.4.1-local');
    expect(highestMatch(parseSpec('12.4.1-other'), labels)).toBeUndefined();
    for (const spec of ['12', '12.4', '12.4.1']) expect([spec, highestMatch(parseSpec(spec), labels)]).toEqual([spec, '12.4.1']);
    expect(highestMatch(parseSpec('latest'), labels)).toBe('12.4.1');
    expect(highestMatch(parseSpec('12.9'), labels)).toBeUndefined();
    expect(() => validateAliasName('12.4.1-local')).toThrow(/not allowed/);
  });

  test('sorted right after their release', () => {
    expect(sortVersionLabels(['12.4.1-local', '12.5.0', '12.4.1', '12.4.1-a', '11.8.0'])).toEqual(['11.8.0', '12.4.1', '12.4.1-a', '12.4.1-local', '12.5.0']);
  });

  test('a .cuda-version may hold one', () => {
    expect(parseVersionFileText('/p/.cuda-version', '# pinned\n12.4.1-local\ncudnn=9\n').spec).toEqual({kind: 'label', text: '12.4.1-local', release: '12.4.1', suffix: 'local'});
    expect(() => parseVersionFileText('/p/.cuda-version', '12.4.1-../x\n')).toThrow(/is not a CUDA version spec/);
  });
});
