import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {existsSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {constantLibraryStrings, constantMarkers, constantStrings, constantStringsContaining} from '../../../../../src/core/elf/read/elf/rodata-strings.js';
import {ElfFile} from '../../../../../src/core/elf/read/elf/file.js';
import {parseHeader} from '../../../../../src/core/elf/read/elf/header.js';
import {sectionHeaders} from '../../../../../src/core/elf/read/elf/sections.js';
import {makeTempDir, type TempDir} from '../../../../helpers/tmp.js';
import {describeIf, testIf} from '../../../../helpers/skip.js';
import {DOWNLOADED, NEEDS} from '../../../../helpers/capabilities.js';
import {buildLib, HAVE_GCC} from '../../fixtures.js';

/**
 * constantLibraryStrings' markers that count only where a name passes a test (`ifNamed`): looked
 * for in the same pass once such a name is seen, and in the pieces read before it by a second
 * read. A library built here holds the marker and the name 6 MB apart in .rodata (the scan reads
 * pieces of 128 KB), in either order, so both the second read and the same-pass search are used.
 */
const MARKER = 'a distinctive message this library carries';
const SPREAD = 6 * 1024 * 1024;

/** A library whose .rodata holds `first`, 6 MB of other constants, then `second` (as whole strings). */
function spreadLib(out: string, first: string, second: string): string {
  return buildLib({out, extra: ['-fno-toplevel-reorder'], source: `
__attribute__((used, section(".rodata.a"))) static const char a[] = "\\0${first}";
__attribute__((used, section(".rodata.b"))) static const char b[${SPREAD}] = {1};
__attribute__((used, section(".rodata.c"))) static const char c[] = "\\0${second}";
`});
}

describeIf(HAVE_GCC, NEEDS.tool('gcc'))('constantLibraryStrings: markers that count where a name passes a test', () => {
  let tmp: TempDir;
  let markerFirst: string;
  let nameFirst: string;
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-rodata-');
    markerFirst = spreadLib(join(tmp.dir, 'libmarkerfirst.so'), MARKER, 'libwanted.so.1');
    nameFirst = spreadLib(join(tmp.dir, 'libnamefirst.so'), 'libwanted.so.1', MARKER);
  });
  afterAll(() => tmp.cleanup());

  test('the layout the test needs: the marker and the name in different pieces, in both orders', () => {
    for (const [lib, before, after] of [[markerFirst, MARKER, 'libwanted.so.1'], [nameFirst, 'libwanted.so.1', MARKER]] as const) {
      const bytes = readFileSync(lib);
      const at = bytes.indexOf(`\0${before}\0`);
      const later = bytes.indexOf(`\0${after}\0`);
      expect(at).toBeGreaterThan(0);
      expect(later - at).toBeGreaterThan(SPREAD);
    }
  });

  test.each([['marker first (read again)', () => markerFirst], ['name first (the same pass)', () => nameFirst]])('%s: found where a name passes', (_what, lib) => {
    const r = constantLibraryStrings(lib(), [], {markers: [MARKER, 'a message it does not carry'], when: (n) => n.startsWith('libwanted')});
    expect(r.names).toEqual(['libwanted.so.1']);
    expect(r.markers).toEqual([MARKER]);
    // What a search for the marker alone finds.
    expect(constantMarkers(lib(), [MARKER])).toEqual([MARKER]);
  });

  test('absent where no name passes, and the markers always looked for are found as before', () => {
    for (const lib of [markerFirst, nameFirst]) {
      expect(constantLibraryStrings(lib, [], {markers: [MARKER], when: (n) => n.startsWith('libother')})).toEqual({names: ['libwanted.so.1'], markers: []});
      expect(constantLibraryStrings(lib, [MARKER])).toEqual({names: ['libwanted.so.1'], markers: [MARKER]});
    }
  });
});

/**
 * Markers are found by their first bytes (Node's memchr search), each hit compared whole: what the
 * scan answers must be what a search for the whole bytes answers. A library's .rodata holds a
 * piece and a half of 4 KB blocks, each beginning with a string that begins as a marker does and
 * then differs (a false hit), then the markers, the first of them across the scan's second 128 KB
 * piece boundary (a filler puts it there: the library is built twice, the second time with the
 * filler the first build's layout asks for).
 */
describeIf(HAVE_GCC, NEEDS.tool('gcc'))('markers: found by their first bytes, each hit compared whole', () => {
  const PIECE = 128 * 1024;
  const markers = ['GGML_BACKEND_PATH', 'HWLOC_PLUGINS_PATH', 'CUDA driver version is insufficient'];
  const decoys = ['GGML_BACKEND_PAXH', 'GGML_BACKEND_PAT', 'HWLOC_PLUGIN', 'CUDA driver version is sufficient'];
  const BLOCKS = (PIECE + PIECE / 2) / 4096;
  let tmp: TempDir;
  let lib: string;
  let rodataOffset: number;
  const source = (fill: number) => [
    ...Array.from({length: BLOCKS}, (_, k) => `__attribute__((used, section(".rodata.d${k}"))) static const char d${k}[4096] = "${decoys[k % decoys.length]}";`),
    `__attribute__((used, aligned(1), section(".rodata.f"))) static const char f[${fill}] = {1};`,
    ...markers.map((m, k) => `__attribute__((used, aligned(1), section(".rodata.m${k}"))) static const char m${k}[] = "\\0${m}";`),
  ].join('\n');
  const rodataOf = (path: string) => {
    const file = ElfFile.open(path);
    try {
      return sectionHeaders(file, parseHeader(file)).find((x) => x.name === '.rodata')!.offset;
    } finally {
      file.close();
    }
  };
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-rodata-markers-');
    const out = join(tmp.dir, 'libmarkers.so');
    buildLib({out, extra: ['-fno-toplevel-reorder'], source: source(1)});
    // Where the first marker starts with a 1-byte filler, relative to .rodata: the filler that
    // puts it 5 bytes before the second piece boundary.
    const at = readFileSync(out).indexOf(markers[0]!) - rodataOf(out);
    lib = buildLib({out, extra: ['-fno-toplevel-reorder'], source: source(1 + 2 * PIECE - 5 - at)});
    rodataOffset = rodataOf(lib);
  });
  afterAll(() => tmp.cleanup());

  test('the layout: the false hits in the first piece, the first marker across the second boundary', () => {
    const bytes = readFileSync(lib);
    for (const d of decoys) expect(bytes.indexOf(d) - rodataOffset).toBeLessThan(PIECE);
    for (const m of markers) for (const d of decoys) expect(d.includes(m)).toBe(false);
    expect(bytes.indexOf(markers[0]!) - rodataOffset).toBe(2 * PIECE - 5);
    for (const m of markers) expect(bytes.indexOf(m, bytes.indexOf(m) + 1)).toBe(-1);
  });

  test('each marker found, and no false hit taken for one', () => {
    expect(constantMarkers(lib, markers)).toEqual(markers);
    expect(constantLibraryStrings(lib, markers).markers).toEqual(markers);
    // Markers that only the false hits begin like: absent.
    const absent = ['GGML_BACKEND_PATH_NOT_HERE', 'HWLOC_PLUGINS_PATHS', 'CUDA driver version is insufficient!'];
    const bytes = readFileSync(lib);
    for (const a of absent) expect(bytes.includes(a)).toBe(false);
    expect(constantMarkers(lib, absent)).toEqual([]);
    expect(constantLibraryStrings(lib, absent).markers).toEqual([]);
    // Markers no longer than the first bytes searched.
    expect(constantMarkers(lib, ['GGML_', 'HWLOC_', 'NOPE'])).toEqual(['GGML_', 'HWLOC_']);
  });
});

// The driver's real libcuda (Debian's libcuda1 550, test/fixtures/fetch-cuda-libs.sh): its release is read from the
// strings around two needles (read/machine/nvidia-driver.ts), which must be every string a regular expression over
// all of its constant strings finds, in the same order.
const LIBCUDA = join(DOWNLOADED, 'trixie-driver', 'usr', 'lib', 'x86_64-linux-gnu', 'nvidia', 'current', 'libcuda.so.550.163.01');
testIf(existsSync(LIBCUDA), NEEDS.realCudaLibs)('constantStringsContaining finds in the real libcuda 550 the strings a regular expression over all of them finds', () => {
  const needles = ['nvidia-application-profiles-', '. Copyright'];
  const all = constantStrings(LIBCUDA, /[^\0]*(?:nvidia-application-profiles-|\. Copyright)[^\0]*/);
  const found = constantStringsContaining(LIBCUDA, needles);
  expect(found).toEqual(all);
  expect(found.some((s) => s.includes('nvidia-application-profiles-550.163.01-rc'))).toBe(true);
  expect(found.some((s) => s.includes('Version 550.163.01. Copyright'))).toBe(true);
});
