/**
 * A sweep over this machine's libraries: every ELF file in the system library directory (or an evenly
 * spread sample of it, CUDAENV_ELF_SWEEP=all for every one) must read exactly as readelf shows it.
 * Linker scripts and other non-ELF files must be ElfError 'not-elf'. CUDAENV_ELF_SWEEP_DIR sweeps another directory.
 */
import {describe, expect, test} from '@jest/globals';
import {closeSync, existsSync, openSync, readSync, readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {ElfError, readElf} from '../../../../../src/core/elf/read/elf/index.js';
import {expectMatchesReadelf} from './compare.js';
import {have} from './oracle.js';
import {testIf} from '../../../../helpers/skip.js';
import {NEEDS} from '../../../../helpers/capabilities.js';

const DIR = [process.env.CUDAENV_ELF_SWEEP_DIR ?? '', '/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64'].find((d) => d && existsSync(d));
const ELF_MAGIC = '7f454c46';
function magicOf(file: string): string {
  const fd = openSync(file, 'r');
  try {
    const b = Buffer.alloc(4);
    return b.subarray(0, readSync(fd, b, 0, 4, 0)).toString('hex');
  } finally {
    closeSync(fd);
  }
}
const SAMPLE = process.env.CUDAENV_ELF_SWEEP === 'all' ? Infinity : 40;
const run = testIf(Boolean(DIR) && have('readelf'), DIR ? NEEDS.tool('readelf', 'binutils') : 'needs a system library directory (/usr/lib/x86_64-linux-gnu, /usr/lib/aarch64-linux-gnu or /usr/lib64)');

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
    const scripts = ['libc.so', 'libm.so'].map((f) => join(DIR!, f)).filter((f) => files.includes(f));
    const picked = new Set(scripts);
    for (let i = 0; i < files.length; i += step) picked.add(files[i]);
    let elf = 0;
    let notElf = 0;
    for (const file of picked) {
      try {
        await readElf(file);
      } catch (error) {
        expect(error).toBeInstanceOf(ElfError);
        expect([file, (error as ElfError).reason]).toEqual([file, 'not-elf']);
        // "Not ELF" must be true of the file: its first four bytes are not the ELF magic.
        expect([file, magicOf(file)]).not.toEqual([file, ELF_MAGIC]);
        notElf++;
        continue;
      }
      await expectMatchesReadelf(file);
      elf++;
    }
    expect(elf).toBeGreaterThan(0);
    // glibc's libc.so and libm.so are linker scripts: the not-ELF path is exercised whenever they are there.
    if (scripts.length > 0) expect(notElf).toBeGreaterThan(0);
  }, 120_000);
});
