import {describe, expect, test} from '@jest/globals';
import {expandDst, parseSearchList} from '../../../../src/core/elf/search/search-path.js';
import {x86IsaLevels} from '../../../../src/core/elf/read/machine/platform.js';

/** Dynamic string tokens and path lists, as elf-loader-spec.md §1.4 and §1.6 describe ld.so's rules. */
const values = {origin: '/opt/pkg/lib', platform: 'x86_64', lib: 'lib/x86_64-linux-gnu'};

describe('expandDst', () => {
  test.each([
    ['$ORIGIN/../deps', '/opt/pkg/lib/../deps'],
    ['${ORIGIN}q', '/opt/pkg/libq'],
    ['/x/$ORIGINX/w', '/x/$ORIGINX/w'],
    ['/x/$ORIGIN_/w', '/x/$ORIGIN_/w'],
    ['/usr/$LIB/x', '/usr/lib/x86_64-linux-gnu/x'],
    ['/p/${PLATFORM}', '/p/x86_64'],
    ['/a/$OSNAME', '/a/$OSNAME'],
    ['/no/tokens', '/no/tokens'],
    ['$', '$'],
    ['${ORIGIN', '${ORIGIN'],
  ])('%s -> %s', (input, output) => {
    expect(expandDst(input, values).value).toBe(output);
  });

  test('a token without a value empties the element', () => {
    expect(expandDst('$ORIGIN/x', {...values, origin: null})).toEqual({value: null, hadToken: true});
  });
});

describe('parseSearchList', () => {
  test('empty elements mean the current directory; duplicates and trailing slashes fold', () => {
    expect(parseSearchList('/a/::/b//:/a:', values, 'env').map((d) => d.dir)).toEqual(['/a/', '', '/b/']);
  });

  test('LD_LIBRARY_PATH also splits on ";", DT_RPATH only on ":"', () => {
    expect(parseSearchList('/a;/b', values, 'env').map((d) => d.dir)).toEqual(['/a/', '/b/']);
    expect(parseSearchList('/a;/b', values, 'dt').map((d) => d.dir)).toEqual(['/a;/b/']);
  });

  test('an element whose token has no value is dropped, unlike an empty one; "/" stays "/"', () => {
    expect(parseSearchList('$ORIGIN/x:/y:/', {...values, origin: null}, 'dt').map((d) => d.dir)).toEqual(['/y/', '/']);
    expect(parseSearchList('', values, 'env')).toEqual([]);
    expect(parseSearchList(null, values, 'dt')).toEqual([]);
  });

  test('each directory keeps the element as written, for explanations', () => {
    expect(parseSearchList('$ORIGIN/../../nvjitlink/lib', values, 'dt')).toEqual([{dir: '/opt/pkg/lib/../../nvjitlink/lib/', element: '$ORIGIN/../../nvjitlink/lib'}]);
  });
});

describe('x86IsaLevels', () => {
  const v2 = ['cx16', 'lahf_lm', 'popcnt', 'sse4_1', 'sse4_2', 'ssse3'];
  const v3 = [...v2, 'avx', 'avx2', 'bmi1', 'bmi2', 'f16c', 'fma', 'abm', 'movbe', 'xsave'];
  const v4 = [...v3, 'avx512f', 'avx512bw', 'avx512cd', 'avx512dq', 'avx512vl'];
  test('levels are cumulative, best first', () => {
    expect(x86IsaLevels(new Set(['sse2']))).toEqual([]);
    expect(x86IsaLevels(new Set(v2))).toEqual(['x86-64-v2']);
    expect(x86IsaLevels(new Set(v3))).toEqual(['x86-64-v3', 'x86-64-v2']);
    expect(x86IsaLevels(new Set(v4))).toEqual(['x86-64-v4', 'x86-64-v3', 'x86-64-v2']);
    expect(x86IsaLevels(new Set([...v4].filter((f) => f !== 'avx2')))).toEqual(['x86-64-v2']);
  });
});
