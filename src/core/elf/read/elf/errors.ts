import {CudaenvError} from '../../../errors.js';

/**
 * Why a file could not be read as ELF. The loader model uses the kind to decide between
 * "skip this candidate" and "the real loader would stop here":
 * - not-elf: no ELF magic (a linker script such as libc.so, a text file, a Python module);
 * - truncated: a structure lies past the end of the file;
 * - malformed: contradictory or absurd values (bad class, offsets outside every segment, hash chain loops);
 * - unsupported: a valid ELF file this reader does not handle (unknown version, odd entry sizes);
 * - io: the file cannot be opened or read (missing, a directory, permissions).
 */
export type ElfErrorReason = 'not-elf' | 'truncated' | 'malformed' | 'unsupported' | 'io';

const HINTS: Record<ElfErrorReason, string> = {
  'not-elf': 'Only ELF shared objects and executables can be checked; pass the real library instead.',
  truncated: 'The file is shorter than its own headers say: it was probably cut off while downloading or unpacking. Reinstall it.',
  malformed: 'The file is corrupt or was damaged by a tool that rewrote it. Reinstall it.',
  unsupported: 'This ELF variant is not supported by cudaenv; the loader model cannot reason about it.',
  io: 'Check that the path exists, is a regular file and is readable.',
};

export class ElfError extends CudaenvError {
  readonly path: string;
  readonly reason: ElfErrorReason;
  /** The errno code for reason 'io' (ENOENT, EISDIR, EACCES, ...). */
  readonly errno?: string;

  constructor(path: string, reason: ElfErrorReason, detail: string, options: {hint?: string; errno?: string; cause?: unknown} = {}) {
    super(`${path}: ${detail}`, {hint: options.hint ?? HINTS[reason], code: `elf-${reason}`, cause: options.cause});
    this.name = 'ElfError';
    this.path = path;
    this.reason = reason;
    this.errno = options.errno;
  }
}
