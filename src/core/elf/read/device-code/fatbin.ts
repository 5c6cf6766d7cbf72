import {closeSync, constants, openSync, readSync} from 'node:fs';

/**
 * NVIDIA's fat binary container, as nvcc, fatbinary and nvlink write it into `.nv_fatbin` (the
 * device code the CUDA runtime registers when the library loads) and `__nv_relfatbin`
 * (relocatable device code, `-rdc=true`, for a later device link). Not documented by NVIDIA; the
 * layout below was read from real files and is checked against `cuobjdump --list-elf/--list-ptx`
 * (test/core/elf/read/device-code/cuobjdump-oracle.test.ts):
 *
 *   container: u32 magic 0xBA55ED50, u16 version 1, u16 header size (16), u64 size of the entries
 *   entry:     u16 kind (1 PTX, 2 ELF/SASS), u16 version, u32 header size (64 and more),
 *              u64 payload size (padded), u32 compressed size, u32 -, u16 minor, u16 major
 *              (PTX: the PTX ISA version; ELF: the cubin's code version), u32 architecture (90 for
 *              sm_90), u32 + u32 name, u64 flags (0x100000 `a`: arch-specific, 0x200000 `f`:
 *              family-specific; 0x2000 LZ4-, 0x8000 zstd-compressed), u64 -, u64 uncompressed size
 *
 * Entries follow each other (header, payload, header, ...); containers follow each other in a
 * section, one per CUDA module. Only headers are read: a payload, compressed or not, is skipped.
 */
export const FATBIN_MAGIC = 0xba55ed50;
export const DEVICE_CODE_SECTIONS = ['.nv_fatbin', '__nv_relfatbin'] as const;

export type ArchVariant = '' | 'a' | 'f';

/** One kernel image of a fat binary: SASS for a real architecture or PTX for a virtual one. */
export interface KernelImage {
  kind: 'sass' | 'ptx';
  /** 90 for sm_90 and compute_90, 120 for sm_120. */
  arch: number;
  /** `a` (sm_90a: this architecture only), `f` (sm_100f: its family), or '' (sm_80). */
  variant: ArchVariant;
  /** PTX: the PTX ISA version ("8.4"); SASS: the cubin's code version ("1.7"). */
  version: string;
  compressed: boolean;
  /** The fat binary holding it, counted from 0 over the file (one per CUDA module). */
  fatbin: number;
  /** In `__nv_relfatbin`: relocatable device code for a device link, never loaded at run time. */
  relocatable: boolean;
  /**
   * False for a SASS image whose cubin holds no kernel (no `.text.NAME` section): the module nvcc
   * adds to every shared library it links, which cuobjdump lists with no function. Absent when
   * not known (PTX, a big or zstd-compressed cubin: taken to hold kernels).
   */
  kernels?: false;
}

export interface DeviceCode {
  /** In file order, as cuobjdump lists them. */
  images: KernelImage[];
  /** Fat binaries in `.nv_fatbin`: the modules the CUDA runtime registers (relocatable ones not counted). */
  fatbins: number;
  /** Set when some device code could not be read (a damaged fat binary): what and where; `images` has what came before it. */
  problem?: string;
}

const FLAG_ARCH_SPECIFIC = 0x100000;
const FLAG_FAMILY_SPECIFIC = 0x200000;
const FLAG_COMPRESSED = 0x2000 | 0x8000;
const KIND_PTX = 1;
const KIND_ELF = 2;
/** Header sizes seen are 64 to 112 bytes; options strings make some longer. */
const MAX_ENTRY_HEADER = 4096;
/**
 * One page: an entry header and, when its payload is small, the next ones. Entries of real
 * libraries hold kilobytes to megabytes of code, so a bigger window mostly reads code it skips
 * (64 KB windows read 175 MB of libtorch_cuda's 1.1 GB to list its 2730 images).
 */
const WINDOW = 4096;
/** No real library comes near this; a loop that would is a damaged file. */
const MAX_IMAGES = 4_000_000;

/**
 * Positioned reads through a small window: headers that sit close together (small payloads) cost
 * one read, and a big payload is jumped over, never read. Memory stays at one window.
 */
class Window {
  private buf = Buffer.alloc(0);
  private start = 0;

  constructor(private readonly fd: number, private readonly fileSize: number) {}

  /** `len` bytes at `off`, or null past the end of the file. */
  bytes(off: number, len: number): Buffer | null {
    if (off < 0 || off + len > this.fileSize) return null;
    if (off < this.start || off + len > this.start + this.buf.length) {
      const want = Math.min(Math.max(len, WINDOW), this.fileSize - off);
      const buf = Buffer.allocUnsafe(want);
      let done = 0;
      while (done < want) {
        const n = readSync(this.fd, buf, done, want - done, off + done);
        if (n === 0) break;
        done += n;
      }
      this.buf = buf.subarray(0, done);
      this.start = off;
      if (done < len) return null;
    }
    return this.buf.subarray(off - this.start, off - this.start + len);
  }
}

/** The device code in the given sections of `path` (located by ./sections.ts), headers only. */
export function readFatbins(path: string, fileSize: number, sections: ReadonlyArray<{name: string; offset: number; size: number}>): DeviceCode {
  const out: DeviceCode = {images: [], fatbins: 0};
  if (sections.length === 0) return out;
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const window = new Window(fd, fileSize);
    let fatbin = 0;
    for (const section of sections) {
      const relocatable = section.name === '__nv_relfatbin';
      const problem = walkSection(window, section, relocatable, () => fatbin++, out);
      if (problem) {
        out.problem = problem;
        break;
      }
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

/** Appends the section's images to `out`; returns what stopped the walk, if anything. */
function walkSection(
  window: Window, section: {name: string; offset: number; size: number}, relocatable: boolean, nextFatbin: () => number, out: DeviceCode,
): string | undefined {
  const end = section.offset + section.size;
  const where = (off: number) => `offset ${off - section.offset} of ${section.name}`;
  let p = section.offset;
  while (p < end) {
    const head = window.bytes(p, Math.min(16, end - p));
    if (!head) return `${section.name} lies past the end of the file`;
    if (head.length < 16 || head.readUInt32LE(0) !== FATBIN_MAGIC) {
      // Zero padding between or after fat binaries is skipped; anything else is not a fat binary.
      if (head.every((b) => b === 0)) {
        // Up to the next non-zero byte (a container's magic starts with 0x50), a window at a time.
        const chunk = window.bytes(p, Math.min(WINDOW, end - p)) ?? head;
        const next = chunk.findIndex((b) => b !== 0);
        p += next < 0 ? chunk.length : next;
        continue;
      }
      return `no fat binary at ${where(p)} (it starts with 0x${head.readUInt32LE(0).toString(16)}, not 0x${FATBIN_MAGIC.toString(16)})`;
    }
    const headerSize = head.readUInt16LE(6);
    const size = u64(head, 8);
    const cend = p + headerSize + size;
    if (headerSize < 16 || !Number.isSafeInteger(cend) || cend > end) {
      return `the fat binary at ${where(p)} says it holds ${size} bytes, past the end of ${section.name} (${section.size} bytes)`;
    }
    const fatbin = nextFatbin();
    if (!relocatable) out.fatbins++;
    let q = p + headerSize;
    while (q < cend) {
      const e = window.bytes(q, Math.min(64, cend - q));
      if (!e || e.length < 64) return `the fat binary at ${where(p)} ends inside an entry header (${where(q)})`;
      const kind = e.readUInt16LE(0);
      const entryHeader = e.readUInt32LE(4);
      const payload = u64(e, 8);
      const next = q + entryHeader + payload;
      if (entryHeader < 64 || entryHeader > MAX_ENTRY_HEADER || !Number.isSafeInteger(next) || next > cend) {
        return `the entry at ${where(q)} has a header of ${entryHeader} bytes and ${payload} bytes of code, which do not fit in its fat binary`;
      }
      if (kind === KIND_PTX || kind === KIND_ELF) {
        if (out.images.length >= MAX_IMAGES) return `more than ${MAX_IMAGES} kernel images`;
        const flags = e.readUInt32LE(40);
        const empty = kind === KIND_ELF && cubinWithoutKernels(window, q + entryHeader, e, flags);
        out.images.push({
          kind: kind === KIND_PTX ? 'ptx' : 'sass',
          arch: e.readUInt32LE(28),
          variant: flags & FLAG_ARCH_SPECIFIC ? 'a' : flags & FLAG_FAMILY_SPECIFIC ? 'f' : '',
          version: `${e.readUInt16LE(26)}.${e.readUInt16LE(24)}`,
          compressed: (flags & FLAG_COMPRESSED) !== 0,
          fatbin,
          relocatable,
          ...(empty ? {kernels: false as const} : {}),
        });
      }
      q = next;
    }
    p = cend;
  }
  return undefined;
}

/** Cubins up to this size (uncompressed) are looked into; one without kernels holds a few notes (under 2 KB in nvcc 12.4 and 13.0). */
const SMALL_CUBIN = 64 * 1024;
const FLAG_LZ4 = 0x2000;

/**
 * Whether the SASS image at `at` (its entry header `e`) is a cubin with no kernel: an ELF file
 * with no section named `.text.*` (each kernel has its own). Only small images are read (an
 * uncompressed or LZ4-compressed payload of at most 64 KB); anything else, or anything that does
 * not parse, is taken to hold kernels.
 */
function cubinWithoutKernels(window: Window, at: number, e: Buffer, flags: number): boolean {
  const stored = u64(e, 8);
  const compressedSize = e.readUInt32LE(16);
  const size = u64(e, 56);
  const lz4 = (flags & FLAG_LZ4) !== 0;
  if ((flags & FLAG_COMPRESSED) !== 0 && !lz4) return false;
  const length = lz4 ? compressedSize : stored;
  if (!(length > 0) || length > SMALL_CUBIN || (lz4 && !(size > 0 && size <= SMALL_CUBIN))) return false;
  const raw = window.bytes(at, length);
  if (!raw) return false;
  const elf = lz4 ? lz4Block(raw, size) : raw;
  return elf !== null && sectionNames(elf)?.every((n) => !n.startsWith('.text.')) === true;
}

/** An LZ4 block (no frame) decompressed to `size` bytes, or null when it is not one. */
export function lz4Block(src: Buffer, size: number): Buffer | null {
  const out = Buffer.alloc(size);
  let i = 0;
  let o = 0;
  const length = (n: number): number => {
    if (n !== 15) return n;
    let b = 255;
    while (b === 255 && i < src.length) {
      b = src[i++]!;
      n += b;
    }
    return n;
  };
  while (i < src.length) {
    const token = src[i++]!;
    const literals = length(token >> 4);
    if (i + literals > src.length || o + literals > size) return null;
    src.copy(out, o, i, i + literals);
    i += literals;
    o += literals;
    if (i >= src.length) break;
    if (i + 2 > src.length) return null;
    const offset = src.readUInt16LE(i);
    i += 2;
    const match = length(token & 15) + 4;
    if (offset === 0 || offset > o || o + match > size) return null;
    for (let k = 0; k < match; k++, o++) out[o] = out[o - offset]!;
  }
  return o === size ? out : null;
}

/** The section names of a little-endian ELF64 file in memory (a cubin), or null when it is not one. */
function sectionNames(elf: Buffer): string[] | null {
  if (elf.length < 64 || elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 2 || elf[5] !== 1) return null;
  const shoff = Number(elf.readBigUInt64LE(40));
  const shentsize = elf.readUInt16LE(58);
  const shnum = elf.readUInt16LE(60);
  const shstrndx = elf.readUInt16LE(62);
  if (shentsize !== 64 || shstrndx >= shnum || shoff + shnum * 64 > elf.length) return null;
  const strOff = Number(elf.readBigUInt64LE(shoff + shstrndx * 64 + 24));
  const strSize = Number(elf.readBigUInt64LE(shoff + shstrndx * 64 + 32));
  if (strOff + strSize > elf.length) return null;
  const names: string[] = [];
  for (let k = 1; k < shnum; k++) {
    const at = elf.readUInt32LE(shoff + k * 64);
    if (at >= strSize) return null;
    const end = elf.indexOf(0, strOff + at);
    names.push(elf.toString('latin1', strOff + at, end < 0 || end > strOff + strSize ? strOff + strSize : end));
  }
  return names;
}

function u64(buf: Buffer, off: number): number {
  const hi = buf.readUInt32LE(off + 4);
  return hi >= 0x200000 ? Number.NaN : hi * 0x100000000 + buf.readUInt32LE(off);
}

/**
 * The name `cuobjdump --list-elf` / `--list-ptx` (CUDA 13) gives an image: `libfoo.so.1.sm_90a.cubin`,
 * `libfoo.so.3.sm_120f.ptx` (the file's name without its last extension, the image's number
 * among those of its kind, counted from 1). cuobjdump writes `a` on SASS but not `f`; PTX gets both.
 */
export function cuobjdumpName(image: KernelImage, file: string, n: number): string {
  const base = file.replace(/^.*\//, '');
  const dot = base.lastIndexOf('.');
  const stem = dot > 0 ? base.slice(0, dot) : base;
  const suffix = image.kind === 'ptx' ? image.variant : image.variant === 'a' ? 'a' : '';
  return `${stem}.${n}.sm_${image.arch}${suffix}.${image.kind === 'ptx' ? 'ptx' : 'cubin'}`;
}

/** An image's architecture as nvcc names it: sm_90a for SASS, compute_90a for PTX. */
export function archName(image: Pick<KernelImage, 'kind' | 'arch' | 'variant'>): string {
  return `${image.kind === 'ptx' ? 'compute' : 'sm'}_${image.arch}${image.variant}`;
}
