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
 *              sm_90), u32 offset of the name from the entry's start and u32 its length (0: no
 *              name; nvcc -G and -lineinfo write the compilation unit's source file,
 *              `magmablas/zaxpycp.cu`, after the header's 64 bytes and its options string),
 *              u64 flags (0x100000 `a`: arch-specific, 0x200000 `f`: family-specific; 0x2000
 *              LZ4-, 0x8000 zstd-compressed), u64 -, u64 uncompressed size
 *
 * Entries follow each other (header, payload, header, ...); containers follow each other in a
 * section, one per CUDA module. Headers are read first; then, per module the runtime registers,
 * just enough code to know whether it holds kernels (see judgeModule).
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
   * Whether the image holds kernels, as read from its code: a cubin's `.text.NAME` sections (one
   * per kernel; none in the module nvcc adds to every shared library it links, which cuobjdump
   * lists with no function), PTX's `.entry` directives. Absent when not read: its module was
   * already known to hold kernels from a cheaper image, it is relocatable code (never registered),
   * or it could not be read (`notJudged` says why).
   */
  kernels?: boolean;
  /**
   * The compilation unit it was built from, when its entry names one (`magmablas/zaxpycp.cu`:
   * nvcc -G and -lineinfo write it; Debian's MAGMA, built with -G, has one on every image), which
   * cuobjdump names it by.
   */
  unit?: string;
  /** Why the image's code could not be read: "compressed with zstd, which this Node.js (v20.20.2) cannot read". */
  notJudged?: string;
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
    const entries: Entry[] = [];
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
        const unit = unitName(window, q, entryHeader, e.readUInt32LE(32), e.readUInt32LE(36));
        if (!relocatable) {
          entries.push({image: out.images.length, at: q + entryHeader, stored: payload, compressedSize: e.readUInt32LE(16), size: u64(e, 56), flags, ptx: kind === KIND_PTX});
        }
        out.images.push({
          kind: kind === KIND_PTX ? 'ptx' : 'sass',
          arch: e.readUInt32LE(28),
          variant: flags & FLAG_ARCH_SPECIFIC ? 'a' : flags & FLAG_FAMILY_SPECIFIC ? 'f' : '',
          version: `${e.readUInt16LE(26)}.${e.readUInt16LE(24)}`,
          compressed: (flags & FLAG_COMPRESSED) !== 0,
          fatbin,
          relocatable,
          ...(unit ? {unit} : {}),
        });
      }
      q = next;
    }
    judgeModule(window, entries, out.images);
    p = cend;
  }
  return undefined;
}

/**
 * The compilation unit an entry header names (`nameAt` bytes from the entry's start, `length`
 * bytes, NUL-padded), or undefined when it names none or the name does not lie inside the header.
 */
function unitName(window: Window, entry: number, headerSize: number, nameAt: number, length: number): string | undefined {
  if (length === 0 || nameAt < 64 || nameAt + length > headerSize) return undefined;
  const raw = window.bytes(entry + nameAt, length);
  if (!raw) return undefined;
  const end = raw.indexOf(0);
  const name = raw.toString('utf8', 0, end < 0 ? raw.length : end);
  return name.length > 0 ? name : undefined;
}

/** An image of a registered module, where its code lies and how it is stored. */
interface Entry {
  image: number;
  /** The payload's offset in the file. */
  at: number;
  stored: number;
  compressedSize: number;
  /** Uncompressed size (the entry header's last field). */
  size: number;
  flags: number;
  ptx: boolean;
}

const FLAG_LZ4 = 0x2000;
const FLAG_ZSTD = 0x8000;
/** No real image comes near this (libtorch_cuda's largest cubins are a few MB): beyond it, not read. */
const MAX_CODE = 256 * 1024 * 1024;
/** PTX is scanned for `.entry` in pieces this big, stopping at the first. */
const PTX_CHUNK = 256 * 1024;
/** `.entry NAME` (`.visible .entry`, `.weak .entry`): a kernel; `.func` is a device function. */
const PTX_ENTRY = /(?:^|[\s;{}])\.entry\s+[A-Za-z_$%]/m;

/** zlib's zstd decompressor: Node.js 22.15, 23.8 and later. */
type ZstdDecompress = (buf: Buffer, options?: {maxOutputLength?: number}) => Buffer;
/** zlib loaded when an image is compressed with zstd, not with the module: a cached check reads no device code (issue 42). */
const zstdDecompressor = (): ZstdDecompress | undefined =>
  (process.getBuiltinModule('node:zlib') as unknown as {zstdDecompressSync?: ZstdDecompress}).zstdDecompressSync;

/**
 * Whether a registered module (one fat binary) holds kernels, recorded on its images: every image
 * of a module is compiled from the same source, so one image with a kernel decides it, and only
 * images read to hold none make a module without kernels (the module nvcc adds to each shared
 * library; NVIDIA's libraries also hold cubins emptied for the architectures a kernel is not built
 * for). Images are read cheapest first: an uncompressed cubin costs its section headers, whatever
 * its size; PTX is scanned up to its first `.entry`; a compressed image (LZ4, NVIDIA's
 * fatbinary default up to CUDA 12; zstd, CUDA 13's) is decompressed, smallest first, one at a time.
 */
function judgeModule(window: Window, entries: Entry[], images: KernelImage[]): void {
  if (entries.length === 0) return;
  const cost = (e: Entry) => ((e.flags & FLAG_COMPRESSED) === 0 && !e.ptx ? 0 : (e.flags & FLAG_COMPRESSED) === 0 ? 1 : 2 + e.size);
  for (const e of [...entries].sort((a, b) => cost(a) - cost(b))) {
    const image = images[e.image]!;
    const verdict = imageKernels(window, e);
    if (typeof verdict === 'string') {
      image.notJudged = verdict;
      continue;
    }
    image.kernels = verdict;
    if (verdict) return;
  }
}

/** Whether one image holds kernels, or why it cannot be told. */
function imageKernels(window: Window, e: Entry): boolean | string {
  const zstd = (e.flags & FLAG_ZSTD) !== 0;
  const lz4 = (e.flags & FLAG_LZ4) !== 0;
  if (!zstd && !lz4) {
    if (!(e.stored > 0)) return 'its entry holds no code';
    return e.ptx ? ptxHasEntry(window, e.at, e.stored) : cubinHasKernels(window, e.at, e.stored);
  }
  const zstdDecompress = zstd ? zstdDecompressor() : undefined;
  if (zstd && !zstdDecompress) return `compressed with zstd, which this Node.js (${process.version}) cannot read (Node.js 22.15, 23.8 and later can)`;
  const length = e.compressedSize > 0 && e.compressedSize <= e.stored ? e.compressedSize : e.stored;
  if (!(length > 0) || !(e.size > 0)) return 'its compressed entry gives no sizes';
  if (e.size > MAX_CODE) return `its code is ${e.size} bytes uncompressed, more than is read (${MAX_CODE})`;
  const raw = window.bytes(e.at, length);
  if (!raw) return 'its code lies past the end of the file';
  let code: Buffer | null;
  if (zstd) {
    try {
      code = zstdDecompress!(raw, {maxOutputLength: Math.max(e.size, 1)});
    } catch {
      code = null;
    }
  } else {
    code = lz4Block(raw, e.size);
  }
  if (!code) return `its ${zstd ? 'zstd' : 'LZ4'}-compressed code does not decompress`;
  if (e.ptx) return PTX_ENTRY.test(code.toString('latin1'));
  const names = sectionNames(code);
  return names ? names.some((n) => n.startsWith('.text.')) : 'its cubin is not an ELF file this reader knows';
}

/**
 * Whether an uncompressed cubin of `length` bytes at `at` has a `.text.NAME` section (one per
 * kernel): its ELF header, section header table and section names only, never its code.
 */
function cubinHasKernels(window: Window, at: number, length: number): boolean | string {
  const bad = 'its cubin is not an ELF file this reader knows';
  const h = window.bytes(at, Math.min(64, length));
  if (!h || h.length < 64 || h.readUInt32BE(0) !== 0x7f454c46 || h[4] !== 2 || h[5] !== 1) return bad;
  const shoff = Number(h.readBigUInt64LE(40));
  const shentsize = h.readUInt16LE(58);
  const shnum = h.readUInt16LE(60);
  const shstrndx = h.readUInt16LE(62);
  if (shentsize !== 64 || shstrndx >= shnum || shoff + shnum * 64 > length) return bad;
  const table = window.bytes(at + shoff, shnum * 64);
  if (!table) return bad;
  const strOff = Number(table.readBigUInt64LE(shstrndx * 64 + 24));
  const strSize = Number(table.readBigUInt64LE(shstrndx * 64 + 32));
  if (strOff + strSize > length || strSize > MAX_CODE) return bad;
  const strings = Buffer.from(window.bytes(at + strOff, strSize) ?? Buffer.alloc(0));
  if (strings.length !== strSize) return bad;
  for (let k = 1; k < shnum; k++) {
    const name = table.readUInt32LE(k * 64);
    if (name >= strSize) return bad;
    if (strings.toString('latin1', name, Math.min(name + 6, strSize)) === '.text.') return true;
  }
  return false;
}

/** Whether uncompressed PTX of `length` bytes at `at` has an `.entry` directive: read in pieces, up to the first. */
function ptxHasEntry(window: Window, at: number, length: number): boolean | string {
  // Pieces overlap by a few bytes, so a directive cut in two is still found.
  const overlap = 64;
  for (let off = 0; off < length; off += PTX_CHUNK - overlap) {
    const piece = readBytes(window, at + off, Math.min(PTX_CHUNK, length - off));
    if (!piece) return 'its code lies past the end of the file';
    if (PTX_ENTRY.test(piece.toString('latin1'))) return true;
    if (off + PTX_CHUNK >= length) break;
  }
  return false;
}

/** `len` bytes at `off`, copied (the window's buffer is reused by the next read). */
function readBytes(window: Window, off: number, len: number): Buffer | null {
  const b = window.bytes(off, len);
  return b ? Buffer.from(b) : null;
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
    if (literals >= 64) src.copy(out, o, i, i + literals);
    else for (let k = 0; k < literals; k++) out[o + k] = src[i + k]!;
    i += literals;
    o += literals;
    if (i >= src.length) break;
    if (i + 2 > src.length) return null;
    const offset = src.readUInt16LE(i);
    i += 2;
    const match = length(token & 15) + 4;
    if (offset === 0 || offset > o || o + match > size) return null;
    if (offset >= match && match >= 64) {
      out.copy(out, o, o - offset, o - offset + match);
      o += match;
    } else {
      // Short or overlapping (the match repeats what it copies): a byte at a time.
      for (let k = 0; k < match; k++, o++) out[o] = out[o - offset]!;
    }
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
 * The name `cuobjdump --list-elf` / `--list-ptx` (CUDA 12.4 and 13.1) gives an image:
 * `libfoo.so.1.sm_90a.cubin`, `libfoo.so.3.sm_120f.ptx` (the file's name without its last
 * extension, the image's number among all those of its kind, counted from 1, named ones included);
 * for an image whose entry names its compilation unit, that unit's file name without its last
 * extension and no number (`magmablas/zaxpycp.cu`: `zaxpycp.sm_70.cubin`; `dir.c.cu`: `dir.c.sm_75.ptx`).
 * cuobjdump writes `a` on SASS but not `f`; PTX gets both.
 */
export function cuobjdumpName(image: KernelImage, file: string, n: number): string {
  const suffix = image.kind === 'ptx' ? image.variant : image.variant === 'a' ? 'a' : '';
  const prefix = image.unit ? withoutExtension(image.unit) : `${withoutExtension(file)}.${n}`;
  return `${prefix}.sm_${image.arch}${suffix}.${image.kind === 'ptx' ? 'ptx' : 'cubin'}`;
}

/** `dir/libfoo.so.1` -> `libfoo.so`: the last path component without its last extension. */
function withoutExtension(path: string): string {
  const base = path.replace(/^.*\//, '');
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(0, dot) : base;
}

/** An image's architecture as nvcc names it: sm_90a for SASS, compute_90a for PTX. */
export function archName(image: Pick<KernelImage, 'kind' | 'arch' | 'variant'>): string {
  return `${image.kind === 'ptx' ? 'compute' : 'sm'}_${image.arch}${image.variant}`;
}
