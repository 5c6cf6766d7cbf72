/**
 * A sweep over this machine's libraries: every ELF file in the system library directory (or an evenly
 * spread sample of it, CUDAENV_ELF_SWEEP=all for every one) must read exactly as readelf shows it.
 * Linker scripts and other non-ELF files must be ElfError 'not-elf'. CUDAENV_ELF_SWEEP_DIR sweeps another directory.
 */
import {describe, expect, test} from '@jest/globals';
import {existsSync, readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {ElfError, readElf} from '../../../../src/core/elf/reader/index.js';
import {expectMatchesReadelf} from './compare.js';
import {have} from './oracle.js';

const DIR = [process.env.CUDAENV_ELF_SWEEP_DIR ?? '', '/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64'].find((d) => d && existsSync(d));
const SAMPLE = process.env.CUDAENV_ELF_SWEEP === 'all' ? Infinity : 40;
const run = DIR && have('readelf') ? test : test.skip;
if (!DIR || !have('readelf')) console.warn('SKIPPED the system library sweep: no system library directory or no readelf');

describe('readElf over the system libraries', () => {
  run(`an evenly spread sample of ${DIR} agrees with readelf`, async () => {
    const files = readdirSync(DIR!).sort().map((f) => join(DIR!, f)).filter((f) => {
      try {
        return statSync(f).isFile();
      } catch {
        return false;
      }
    });
    const step = Math.max(1, Math.floor(files.length / SAMPLE));
    let elf = 0;
    for (let i = 0; i < files.length; i += step) {
      try {
        await readElf(files[i]);
      } catch (error) {
        expect(error).toBeInstanceOf(ElfError);
        expect([files[i], (error as ElfError).reason]).toEqual([files[i], 'not-elf']);
        continue;
      }
      await expectMatchesReadelf(files[i]);
      elf++;
    }
    expect(elf).toBeGreaterThan(0);
  }, 120_000);
});
