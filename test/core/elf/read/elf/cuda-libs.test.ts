/**
 * Real CUDA libraries (Debian non-free: CUDA 11.8 from bookworm, 12.4 from trixie), fetched by
 * test/fixtures/fetch-cuda-libs.sh. Skipped with a message when they are not there.
 */
import {describe, expect, test} from '@jest/globals';
import {existsSync} from 'node:fs';
import {join} from 'node:path';
import {readElf, readStats, resetReadStats} from '../../../../../src/core/elf/read/elf/index.js';
import {expectMatchesReadelf} from './compare.js';
import {have} from './oracle.js';
import {testIf} from '../../../../helpers/skip.js';
import {NEEDS} from '../../../../helpers/capabilities.js';

const LIB = (suite: string, name: string): string => join(import.meta.dirname, '../../../../fixtures/downloaded', suite, 'usr/lib/x86_64-linux-gnu', name);
const CUDA12 = ['libcudart.so.12', 'libnvJitLink.so.12', 'libcusparse.so.12', 'libcupti.so.12'].map((n) => LIB('trixie', n));
const CUDA11 = ['libcudart.so.11.0', 'libcusparse.so.11', 'libcupti.so.11.8'].map((n) => LIB('bookworm', n));

function whenPresent(files: string[], what: string): typeof test {
  const missing = files.filter((f) => !existsSync(f));
  if (!have('readelf')) return testIf(false, `${what} ${NEEDS.tool('readelf', 'binutils')}`);
  return testIf(missing.length === 0, `${NEEDS.realCudaLibs} (missing: ${missing.map((f) => f.replace(/.*downloaded\//, '')).join(', ')})`);
}

describe('readElf on real CUDA libraries', () => {
  whenPresent(CUDA12, 'CUDA 12.4 library tests')('CUDA 12.4: everything agrees with readelf; the nvJitLink requirement of libcusparse', async () => {
    for (const lib of CUDA12) await expectMatchesReadelf(lib);
    const cudart = await readElf(CUDA12[0]);
    expect(cudart.soname).toBe('libcudart.so.12');
    expect(cudart.versionDefinitions.map((d) => d.name)).toContain('libcudart.so.12');
    const cusparse = await readElf(CUDA12[2], {symbols: true});
    expect(cusparse).toMatchObject({soname: 'libcusparse.so.12', runpath: '$ORIGIN', symbolic: true});
    expect(cusparse.needed).toContain('libnvJitLink.so.12');
    expect(cusparse.versionNeeds.find((n) => n.file === 'libnvJitLink.so.12')?.versions.map((v) => v.name)).toEqual(['libnvJitLink.so.12']);
    // The seed failure: this symbol must come from a libnvJitLink.so.12 that is at least 12.4.
    expect(cusparse.symbols.find((s) => s.name === '__nvJitLinkComplete_12_4'))
      .toMatchObject({defined: false, version: 'libnvJitLink.so.12', versionFile: 'libnvJitLink.so.12'});
    const jit = await readElf(CUDA12[1], {symbols: true});
    expect(jit.symbols.find((s) => s.name === '__nvJitLinkComplete_12_4')).toMatchObject({defined: true, version: 'libnvJitLink.so.12'});
  }, 60_000);

  whenPresent(CUDA11, 'CUDA 11.8 library tests')('CUDA 11.8: everything agrees with readelf', async () => {
    for (const lib of CUDA11) await expectMatchesReadelf(lib);
    expect((await readElf(CUDA11[0])).soname).toBe('libcudart.so.11.0');
  }, 60_000);

  whenPresent([CUDA12[2]], 'the libcusparse read-cost test')('a 280 MB libcusparse costs well under 1 MB of reads, symbols included', async () => {
    resetReadStats();
    const info = await readElf(CUDA12[2], {symbols: true});
    expect(info.symbols.length).toBeGreaterThan(100);
    expect(readStats().bytes).toBeLessThan(1024 * 1024);
  });
});
