import {ElfError} from './errors.js';
import {ElfFile} from './file.js';
import {parseHeader, PF_X, readProgramHeaders, PT_LOAD, type ParsedHeader} from './header.js';
import {sectionHeaders, SHT_PROGBITS, withSections, type OpenedSections, type SectionHeader} from './sections.js';

const PF_W = 2;
/**
 * Read in pieces: a library's .rodata reaches tens of MB (libnvrtc 8 MB, libcuda 20 MB). Small
 * ones, so that a piece read is still in the CPU's cache for the searches over it (the names,
 * then each marker): over the 98 MB a first check of /usr/lib/x86_64-linux-gnu scans, 128 KB
 * pieces took 51-61 ms where 4 MB pieces took 93-98 ms, the read alone 16-21 ms against 32-50.
 */
const CHUNK = 128 * 1024;
/** Without section headers the read-only segments are scanned instead, up to this much. */
const SEGMENT_LIMIT = 64 * 1024 * 1024;

/** The file ranges that hold an object's constant strings: `.rodata`, else (no section headers) its read-only, non-executable segments. */
function constantRanges(file: ElfFile, h: ParsedHeader, sections: SectionHeader[] = sectionHeaders(file, h)): Array<[number, number]> {
  // With section headers, .rodata and .rodata.* only (none: no constant strings); the segments
  // would bring .dynstr, whose DT_NEEDED names are not strings the code uses.
  if (sections.length > 0) return rodataSections(file, sections);
  const ranges: Array<[number, number]> = [];
  let total = 0;
  for (const ph of readProgramHeaders(file, h)) {
    if (ph.type !== PT_LOAD || (ph.flags & (PF_X | PF_W)) !== 0 || ph.filesz === 0) continue;
    const size = Math.min(ph.filesz, SEGMENT_LIMIT - total, file.size - ph.offset);
    if (size <= 0) break;
    ranges.push([ph.offset, size]);
    total += size;
  }
  return ranges;
}

function rodataSections(file: ElfFile, sections: SectionHeader[]): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  for (const s of sections) {
    if (s.type !== SHT_PROGBITS || (s.name !== '.rodata' && !s.name.startsWith('.rodata.'))) continue;
    file.check(s.offset, s.size, `section ${s.name}`);
    ranges.push([s.offset, s.size]);
  }
  return ranges;
}

/**
 * The NUL-terminated constant strings of an ELF object that match `pattern` in whole (the names a
 * library passes to dlopen live there: libcudart's "libcuda.so.1", libnvrtc's
 * "libnvrtc-builtins.so.12.4"), each once, in file order. Reads `.rodata` in pieces with
 * positioned reads, never the whole file. `pattern` must not use the g or y flags.
 */
export function constantStrings(path: string, pattern: RegExp): string[] {
  const whole = new RegExp(`(?<=\\0)(?:${pattern.source})(?=\\0)`, `g${pattern.flags.replace(/[gy]/g, '')}`);
  const found = new Set<string>();
  const file = ElfFile.open(path);
  try {
    const h = parseHeader(file);
    for (const [start, size] of constantRanges(file, h)) {
      // Pieces overlap by the longest string a match may need, so none is cut in two unseen.
      const overlap = 4096;
      for (let off = start; off < start + size; off += CHUNK) {
        const from = Math.max(start, off - overlap);
        const len = Math.min(start + size, off + CHUNK) - from;
        // A leading NUL so that a string at the very start of the range matches too.
        const text = '\0' + file.scan(from, len, scanBuffer(), 'constant strings').toString('latin1');
        for (const m of text.matchAll(whole)) found.add(m[0]);
      }
    }
  } catch (error) {
    if (error instanceof ElfError) throw error;
    throw new ElfError(path, 'io', `cannot read its constant strings: ${(error as Error).message}`);
  } finally {
    file.close();
  }
  return [...found];
}

/**
 * The NUL-terminated string of a piece (`buf`, read at file offset `from` of a range [start, end))
 * that holds byte `at`, as [first, past-the-end] in `buf`; null when the piece's margin cuts it
 * (no NUL within reach on a side where the range goes on): the neighbouring piece has it whole.
 */
function stringAround(buf: Buffer, at: number, from: number, start: number, end: number): [number, number] | null {
  const s = buf.lastIndexOf(0, at) + 1;
  const e = buf.indexOf(0, at);
  if ((s === 0 && from > start) || (e < 0 && from + buf.length < end)) return null;
  return [s, e < 0 ? buf.length : e];
}

/** How far constantStringsContaining reads around a needle for its string: constantStrings' overlap. */
const STRING_REACH = 4096;

/**
 * The whole NUL-terminated constant strings (of at most STRING_REACH bytes on each side of the
 * needle) that contain any of `needles`, each once, in file order: constantStrings for a test a regular
 * expression need not run over every byte of (a driver's 28 MB of .rodata cost 0.15-0.6 s so),
 * since the needles are found with Buffer.indexOf and only the strings around them decoded.
 */
export function constantStringsContaining(path: string, needles: readonly string[]): string[] {
  const wanted = needles.map((n) => Buffer.from(n, 'latin1'));
  const found = new Map<string, number>();
  const file = ElfFile.open(path);
  try {
    const h = parseHeader(file);
    eachPiece(file, constantRanges(file, h), LIBRARY_NAMES_SCAN_LIMIT, STRING_REACH, (buf, coreStart, coreEnd, from, start, end) => {
      for (const needle of wanted) {
        for (let at = buf.indexOf(needle, coreStart); at >= 0 && at < coreEnd; at = buf.indexOf(needle, at + 1)) {
          const span = stringAround(buf, at, from, start, end);
          if (!span) continue;
          const text = buf.toString('latin1', span[0], span[1]);
          if (!found.has(text)) found.set(text, from + span[0]);
        }
      }
    });
  } catch (error) {
    if (error instanceof ElfError) throw error;
    throw new ElfError(path, 'io', `cannot read its constant strings: ${(error as Error).message}`);
  } finally {
    file.close();
  }
  return [...found].sort((a, b) => a[1] - b[1]).map(([text]) => text);
}

/** A library name, whole: "libcuda.so.1", "libnvrtc.so." (completed at run time), "libnccl-net-%s.so" (a template). */
const LIBRARY_NAME = /^lib[A-Za-z0-9_+%-][A-Za-z0-9_+%.-]*\.so(?:\.\d+)*\.?$/;
/** The longest string taken for a library name; longer ones are text that mentions one. */
const NAME_MAX = 255;
/** At most this much constant data is scanned per file (libtorch_cuda's .rodata is 6 MB, libtorch_cpu's 40 MB). */
export const LIBRARY_NAMES_SCAN_LIMIT = 128 * 1024 * 1024;

/**
 * Every whole constant string of an ELF object that has the shape of a library name (lib*.so,
 * lib*.so.N..., a prefix ending in ".so." and a printf template such as "libnccl-net-%s.so"), each
 * once, in file order. The same ranges as constantStrings (`.rodata` and `.rodata.*`, else the
 * read-only segments), read in pieces (CHUNK), and at most LIBRARY_NAMES_SCAN_LIMIT bytes: the
 * bytes ".so" are found with Buffer.indexOf (memchr speed), and only the string around each is
 * decoded, so a library's tens of MB of tables cost a scan, not a regular expression over text.
 */
export function libraryNameStrings(path: string): string[] {
  return constantLibraryStrings(path, []).names;
}

/** The scans' one piece buffer: a piece and its margins (constantStrings' 4 KB overlap the widest), reused (ElfFile.scan). */
let scratch: Buffer | null = null;
function scanBuffer(): Buffer {
  scratch ??= Buffer.allocUnsafeSlow(CHUNK + 8192);
  return scratch;
}

/**
 * The pieces of `ranges` (at most `limit` bytes in all), each with `margin` bytes of its neighbours
 * on both sides so that a string of at most `margin` bytes lies whole in one piece: `fn` gets the
 * piece, where its own part starts and ends in it, and its file offset. `fn` returning true stops.
 */
function eachPiece(file: ElfFile, ranges: Array<[number, number]>, limit: number, margin: number, fn: (buf: Buffer, coreStart: number, coreEnd: number, from: number, start: number, end: number) => boolean | void): void {
  let budget = limit;
  for (const [start, whole] of ranges) {
    const size = Math.min(whole, budget);
    budget -= size;
    for (let off = start; off < start + size; off += CHUNK) {
      const from = Math.max(start, off - margin);
      const to = Math.min(start + size, off + CHUNK + margin);
      const buf = file.scan(from, to - from, scanBuffer(), 'constant strings');
      if (fn(buf, off - from, Math.min(start + size, off + CHUNK) - from, from, start, start + size) === true) return;
    }
    if (budget <= 0) break;
  }
}

/**
 * A marker (a distinctive string of at most NAME_MAX bytes) as its search needs it: its bytes, and
 * the first ANCHOR of them. Node's Buffer.indexOf runs memchr over the first byte of a needle
 * shorter than 7 bytes, and Boyer-Moore-Horspool for a longer one, which over constant data is
 * twice as slow (libLLVM-15's 35 MB: "GGML_BACKEND_PATH" 5.2 ms, "GGML_" 2.3 ms): a marker is found by
 * its anchor, each hit compared whole. Made once per marker text (a Buffer.from per scanned file
 * was 5% of the scans).
 */
interface Marker {
  text: string;
  bytes: Buffer;
  anchor: Buffer;
}

const ANCHOR = 6;
/** What every library name holds (".so", ".so.N", ".so."): the scan's needle. */
const SO = Buffer.from('.so', 'latin1');
const markerCache = new Map<string, Marker>();

function markerOf(text: string): Marker {
  let m = markerCache.get(text);
  if (!m) {
    const bytes = Buffer.from(text, 'latin1');
    markerCache.set(text, m = {text, bytes, anchor: bytes.subarray(0, ANCHOR)});
  }
  return m;
}

/** Whether `buf` holds the marker's bytes (anywhere: the pieces' margins hold any marker whole in one piece). */
function holds(buf: Buffer, m: Marker): boolean {
  const n = m.bytes.length;
  for (let at = buf.indexOf(m.anchor); at >= 0 && at + n <= buf.length; at = buf.indexOf(m.anchor, at + 1)) {
    if (n <= ANCHOR || buf.compare(m.bytes, ANCHOR, n, at + ANCHOR, at + n) === 0) return true;
  }
  return false;
}

/**
 * libraryNameStrings, and which of `markers` (byte strings of at most 255 bytes: a distinctive
 * message a library carries) occur anywhere in the same ranges, in the same single pass.
 * `ifNamed.markers` are looked for the same way, but only in an object one of whose names passes
 * `ifNamed.when` (answered absent otherwise): a marker that matters only for such names costs the
 * others nothing (libLLVM's 35 MB of constant data named no CUDA library, and each marker is one
 * more look at every byte). The pieces read before the first such name are read again for them.
 */
export function constantLibraryStrings(
  path: string, markers: readonly string[], ifNamed?: {markers: readonly string[]; when: (name: string) => boolean},
): {names: string[]; markers: string[]} {
  try {
    return withSections(path, (o) => constantLibraryStringsIn(o, markers, ifNamed));
  } catch (error) {
    if (error instanceof ElfError) throw error;
    throw new ElfError(path, 'io', `cannot read its constant strings: ${(error as Error).message}`);
  }
}

/** constantLibraryStrings of an object already opened (sections.ts withSections). */
export function constantLibraryStringsIn(
  {file, h, sections}: OpenedSections, markers: readonly string[], ifNamed?: {markers: readonly string[]; when: (name: string) => boolean},
): {names: string[]; markers: string[]} {
  const path = file.path;
  const found = new Set<string>();
  const wanted = markers.map(markerOf);
  const later = (ifNamed?.markers ?? []).map(markerOf);
  const seenMarkers = new Set<string>();
  // The pieces read before a name passed ifNamed.when: [from, length].
  const before: Array<[number, number]> = [];
  let named = false;
  try {
    eachPiece(file, constantRanges(file, h, sections), LIBRARY_NAMES_SCAN_LIMIT, NAME_MAX, (buf, coreStart, coreEnd, from, start, end) => {
      for (const m of wanted) {
        if (!seenMarkers.has(m.text) && holds(buf, m)) seenMarkers.add(m.text);
      }
      for (let at = buf.indexOf(SO, coreStart); at >= 0 && at < coreEnd; at = buf.indexOf(SO, at + 1)) {
        const span = stringAround(buf, at, from, start, end);
        if (!span) continue;
        const [s, stop] = span;
        if (stop - s > NAME_MAX || at - s < 4) continue;
        const text = buf.toString('latin1', s, stop);
        if (LIBRARY_NAME.test(text)) {
          found.add(text);
          if (!named && ifNamed?.when(text)) named = true;
        }
        at = stop;
      }
      if (later.length === 0) return;
      if (!named) {
        before.push([from, buf.length]);
        return;
      }
      for (const m of later) {
        if (!seenMarkers.has(m.text) && holds(buf, m)) seenMarkers.add(m.text);
      }
    });
    if (named) {
      for (const [from, length] of before) {
        const unseen = later.filter((m) => !seenMarkers.has(m.text));
        if (unseen.length === 0) break;
        const buf = file.scan(from, length, scanBuffer(), 'constant strings');
        for (const m of unseen) if (holds(buf, m)) seenMarkers.add(m.text);
      }
    }
  } catch (error) {
    if (error instanceof ElfError) throw error;
    throw new ElfError(path, 'io', `cannot read its constant strings: ${(error as Error).message}`);
  }
  return {names: [...found], markers: [...markers, ...(ifNamed?.markers ?? [])].filter((m) => seenMarkers.has(m))};
}

/**
 * Which of `markers` (byte strings of at most 255 bytes) occur in an object's constant data (the
 * ranges of constantStrings, at most LIBRARY_NAMES_SCAN_LIMIT bytes), one pass, stopping once all
 * are seen. For markers only some callers need: each marker is one more memchr-speed pass.
 */
export function constantMarkers(path: string, markers: readonly string[]): string[] {
  if (markers.length === 0) return [];
  const wanted = markers.map(markerOf);
  const seen = new Set<string>();
  const file = ElfFile.open(path);
  try {
    const h = parseHeader(file);
    eachPiece(file, constantRanges(file, h), LIBRARY_NAMES_SCAN_LIMIT, NAME_MAX, (buf) => {
      for (const m of wanted) {
        if (!seen.has(m.text) && holds(buf, m)) seen.add(m.text);
      }
      return seen.size === wanted.length;
    });
  } catch (error) {
    if (error instanceof ElfError) throw error;
    throw new ElfError(path, 'io', `cannot read its constant strings: ${(error as Error).message}`);
  } finally {
    file.close();
  }
  return markers.filter((m) => seen.has(m));
}

/** At most this much code is scanned by codeContains (ggml's registry has 21 KB). */
export const CODE_SCAN_LIMIT = 16 * 1024 * 1024;

/**
 * Whether the executable segments of an ELF object hold `bytes` (a short string the compiler put
 * in an instruction as an immediate: ggml's "libggml-" is a movabs operand, no constant string).
 * Read in pieces (CHUNK), at most CODE_SCAN_LIMIT bytes; a larger object is not scanned past that.
 */
export function codeContains(path: string, bytes: Buffer): boolean {
  const file = ElfFile.open(path);
  try {
    const h = parseHeader(file);
    let budget = CODE_SCAN_LIMIT;
    for (const ph of readProgramHeaders(file, h)) {
      if (ph.type !== PT_LOAD || (ph.flags & PF_X) === 0 || ph.filesz === 0) continue;
      const size = Math.min(ph.filesz, budget, Math.max(0, file.size - ph.offset));
      budget -= size;
      for (let off = ph.offset; off < ph.offset + size; off += CHUNK) {
        const from = Math.max(ph.offset, off - bytes.length);
        const len = Math.min(ph.offset + size, off + CHUNK) - from;
        if (file.scan(from, len, scanBuffer(), 'code').indexOf(bytes) >= 0) return true;
      }
      if (budget <= 0) break;
    }
    return false;
  } catch (error) {
    if (error instanceof ElfError) throw error;
    throw new ElfError(path, 'io', `cannot read its code: ${(error as Error).message}`);
  } finally {
    file.close();
  }
}
