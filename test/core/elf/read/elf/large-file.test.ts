/**
 * The reader's cost does not depend on the file size: a real library padded to 1 GB (sparse, so the
 * test costs no disk) is read with a few KB of positioned reads. This is the guarantee behind the
 * check command's memory benchmark.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {truncateSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {readElf, readStats, resetReadStats} from '../../../../../src/core/elf/read/elf/index.js';
import {makeTempDir} from '../../../../helpers/tmp.js';
import {gcc, have} from './oracle.js';
import {describeIf} from '../../../../helpers/skip.js';

const tools = have('gcc') && have('readelf');
const describeTools = describeIf(tools, 'needs gcc and readelf (apt-get install gcc binutils)');

describeTools('readElf on a 1 GB shared object', () => {
  let dir: string;
  let cleanup: () => void;
  let big: string;
  let small: string;
  beforeAll(() => {
    ({dir, cleanup} = makeTempDir('cudaenv-elfbig-'));
    const src = Array.from({length: 300}, (_, i) => `int kernel_${i}(int x) { return x + ${i}; }`).join('\n');
    small = gcc(dir, 'libsmall.so', src, ['-shared', '-fPIC', '-Wl,-soname,libtorch_cuda.so']);
    big = gcc(dir, 'libtorch_cuda.so', src, ['-shared', '-fPIC', '-Wl,-soname,libtorch_cuda.so']);
    // Padding after everything the headers describe: the ELF stays valid, the file is 1 GiB.
    truncateSync(big, 1024 ** 3);
  });
  afterAll(() => cleanup());

  test('reading headers, versions and all dynamic symbols costs kilobytes, as for the small original', async () => {
    expect(statSync(big).size).toBe(1024 ** 3);
    resetReadStats();
    const small1 = await readElf(small, {symbols: true});
    const smallCost = readStats();
    resetReadStats();
    const info = await readElf(big, {symbols: true});
    const cost = readStats();
    expect(info.soname).toBe('libtorch_cuda.so');
    expect(info.symbols.filter((s) => s.name.startsWith('kernel_'))).toHaveLength(300);
    expect({...info, path: ''}).toEqual({...small1, path: ''});
    expect(cost.bytes).toBeLessThan(64 * 1024);
    expect(cost.bytes).toBe(smallCost.bytes);
    expect(cost.reads).toBeLessThan(40);
    resetReadStats();
    await readElf(big);
    expect(readStats().bytes).toBeLessThan(32 * 1024);
  });
});
