import {describe, expect, test} from '@jest/globals';
import {hookFileName, HOOK_BASENAME} from '../../../src/core/conda/names.js';

/*
 * conda: activate.d in sorted() order, deactivate.d in sorted(reverse=True) order (Python
 * compares code points); micromamba: std::sort, and std::greater for deactivate (bytes).
 * Names below are real ones from conda-forge packages.
 */
const PACKAGE_SCRIPTS = [
  '~cuda-nvcc_activate.sh', 'activate-binutils_linux-64.sh', 'activate-gcc_linux-64.sh', 'libglib_activate.sh',
  'openssl_activate.sh', 'proj4-activate.sh', 'zz-last.sh', '~~a.sh', 'ZZZ.sh', '99-late.sh', 'z.sh',
];
const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('hook script names', () => {
  test('cudaenv\'s activate script sorts after every package\'s, its deactivate script before', () => {
    const ours = hookFileName('sh');
    const activate = [...PACKAGE_SCRIPTS, ours].sort(byteOrder);
    expect(activate.at(-1)).toBe(ours);
    const deactivate = [...PACKAGE_SCRIPTS, ours].sort(byteOrder).reverse();
    expect(deactivate[0]).toBe(ours);
    // JavaScript's default sort (UTF-16 code units) agrees for ASCII names, as Python's does.
    expect([...PACKAGE_SCRIPTS, ours].sort().at(-1)).toBe(ours);
  });

  test('one name per shell family with the extension conda and micromamba select by', () => {
    expect(['sh', 'fish', 'csh'].map((s) => hookFileName(s as 'sh'))).toEqual([`${HOOK_BASENAME}.sh`, `${HOOK_BASENAME}.fish`, `${HOOK_BASENAME}.csh`]);
  });
});
