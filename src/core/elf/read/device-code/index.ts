/**
 * The GPU code an ELF object carries (issue 33): the SASS architectures and PTX versions of each
 * kernel image in its fat binaries, read from the section headers and the fat binaries' entry
 * headers with positioned reads (a 1 GB libtorch_cuda.so costs its entry headers, never its
 * code). What `cuobjdump --list-elf` and `--list-ptx` list, without running anything.
 */
import {ElfError} from '../elf/errors.js';
import {ElfFile} from '../elf/file.js';
import {parseHeader} from '../elf/header.js';
import {DEVICE_CODE_SECTIONS, readFatbins, type DeviceCode} from './fatbin.js';
import {findSections} from './sections.js';

export {archName, cuobjdumpName, type ArchVariant, type DeviceCode, type KernelImage} from './fatbin.js';

const NAMES = new Set<string>(DEVICE_CODE_SECTIONS);

/**
 * The device code of `path`: no images for an object without fat binaries (a host-only library).
 * A file that is not ELF, or whose section headers are damaged, throws an ElfError naming it; a
 * damaged fat binary does not: `problem` says what and where, `images` keeps what came before.
 */
export function readDeviceCode(path: string): DeviceCode {
  const file = ElfFile.open(path);
  let sections;
  try {
    sections = findSections(file, parseHeader(file), NAMES);
  } finally {
    file.close();
  }
  try {
    return readFatbins(path, file.size, sections);
  } catch (error) {
    throw error instanceof ElfError ? error : new ElfError(path, 'io', `cannot read its device code: ${(error as Error).message}`, {cause: error});
  }
}
