import {spawnSync} from 'node:child_process';
import {cuobjdumpName, readDeviceCode} from '../../../../../src/core/elf/read/device-code/index.js';

/** What cuobjdump lists and what the device-code reader lists, named alike (cuobjdump-oracle.test.ts, the corpus test). */
export interface Listing {
  lines: string[];
  /** cuobjdump's fatal error, when it stopped part-way. */
  fatal: string | null;
}

/** `cuobjdump --list-elf --list-ptx FILE`: one run lists both (interleaved per fat binary), split by kind. */
export function cuobjdump(tool: string, file: string): Record<'elf' | 'ptx', Listing> {
  const r = spawnSync(tool, ['--list-elf', '--list-ptx', file], {encoding: 'utf8', maxBuffer: 64 << 20});
  const fatal = /cuobjdump fatal\s*:\s*(.*)/.exec(r.stderr)?.[1] ?? null;
  if (r.status !== 0 && fatal === null && !/does not contain device code/.test(r.stderr)) throw new Error(`${tool} ${file} exited ${r.status}: ${r.stderr}`);
  const of = (kind: string) => r.stdout.split('\n').filter((l) => l.startsWith(`${kind} file`)).map((l) => l.replace(/^(ELF|PTX) file\s+(\d+):\s+/, ''));
  return {elf: {lines: of('ELF'), fatal}, ptx: {lines: of('PTX'), fatal}};
}

export function mine(file: string, mode: 'elf' | 'ptx'): string[] {
  const images = readDeviceCode(file).images.filter((i) => i.kind === (mode === 'elf' ? 'sass' : 'ptx'));
  return images.map((image, n) => cuobjdumpName(image, file, n + 1));
}

/** Kind, order and architecture number: what Debian's CUDA 12.4 cuobjdump is compared on. */
export const archOnly = (names: string[]) => names.map((n) => n.replace(/\.sm_(\d+)[af]?\.(cubin|ptx)$/, '.sm_$1.$2'));

