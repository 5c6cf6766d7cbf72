import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {readDlopenNotes} from '../../../../../src/core/elf/read/elf/dlopen-notes.js';
import {ElfError} from '../../../../../src/core/elf/read/elf/index.js';
import {makeTempDir, type TempDir} from '../../../../helpers/tmp.js';
import {describeIf} from '../../../../helpers/skip.js';
import {NEEDS} from '../../../../helpers/capabilities.js';
import {buildLib, HAVE_GCC} from '../../fixtures.js';

/**
 * ELF dlopen metadata (issue 43): libraries built by gcc with the notes laid out as systemd's
 * ELF_NOTE_DLOPEN macro lays them out (src/fundamental/elf-note... : a 4-byte aligned struct of
 * n_namesz, n_descsz, n_type = 0x407c0c0a, the owner "FDO\0", the JSON with its NUL, padded to 4),
 * and as an assembly `.section .note.dlopen,"a"` writes them. `systemd-analyze dlopen-metadata`
 * (systemd 256 and later) is not in Debian 12 (systemd 252 says "Unknown command verb"), so the
 * oracle is binutils' own note walk: `readelf -n` lists each note's owner, size and type.
 */
const NOTE_MACRO = `
#include <stdint.h>
#define ELF_NOTE_DLOPEN_VENDOR "FDO"
#define ELF_NOTE_DLOPEN_TYPE UINT32_C(0x407c0c0a)
#define ELF_NOTE_DLOPEN(json, var) \\
  __attribute__((used, section(".note.dlopen"))) _Alignas(sizeof(uint32_t)) static const struct { \\
    struct { uint32_t n_namesz, n_descsz, n_type; } nhdr; \\
    char name[sizeof(ELF_NOTE_DLOPEN_VENDOR)]; \\
    _Alignas(sizeof(uint32_t)) char dlopen_json[sizeof(json)]; \\
  } var = { .nhdr = { .n_namesz = sizeof(ELF_NOTE_DLOPEN_VENDOR), .n_descsz = sizeof(json), .n_type = ELF_NOTE_DLOPEN_TYPE }, \\
            .name = ELF_NOTE_DLOPEN_VENDOR, .dlopen_json = json }
`;
const cString = (s: string) => JSON.stringify(s);

/** What `readelf -n` says of the notes of `.note.dlopen`: [owner, data size, type] per note. */
function readelfNotes(path: string): Array<[string, number, string]> {
  const r = spawnSync('readelf', ['-nW', path], {encoding: 'utf8'});
  const section = r.stdout.split(/Displaying notes found in: /).find((s) => s.startsWith('.note.dlopen')) ?? '';
  return [...section.matchAll(/(\S+)\s+0x([0-9a-f]+)\s+(?:Unknown note type: \((0x[0-9a-f]+)\)|(\S+))/g)].map((m) => [m[1]!, parseInt(m[2]!, 16), m[3] ?? m[4]!]);
}

const d = describeIf(HAVE_GCC, NEEDS.tool('gcc'));

d('.note.dlopen, read as the specification lays it out', () => {
  let tmp: TempDir;
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-dlopen-notes-');
  });
  afterAll(() => tmp?.cleanup());

  test('systemd\'s macro, two notes: each entry as written, priority "recommended" where none is given; readelf sees the same notes', () => {
    const zstd = '[{"feature":"zstd","description":"Support zstd compression","priority":"recommended","soname":["libzstd.so.1"]}]';
    const cuda = '[{"feature":"gpu","description":"CUDA acceleration","priority":"suggested","soname":["libcudart.so.12","libcudart.so.11.0"]},{"soname":["libnvrtc.so.12"],"priority":"required"}]';
    const pcre = '[{"soname":["libpcre2-8.so.0"]}]';
    const lib = buildLib({out: join(tmp.dir, 'libdeclares.so'), soname: 'libdeclares.so.1', source: `${NOTE_MACRO}
ELF_NOTE_DLOPEN(${cString(zstd)}, n1);
ELF_NOTE_DLOPEN(${cString(cuda)}, n2);
ELF_NOTE_DLOPEN(${cString(pcre)}, n3);
int f(void) { return 0; }
`});
    expect(readDlopenNotes(lib)).toEqual([
      {soname: ['libzstd.so.1'], feature: 'zstd', description: 'Support zstd compression', priority: 'recommended'},
      {soname: ['libcudart.so.12', 'libcudart.so.11.0'], feature: 'gpu', description: 'CUDA acceleration', priority: 'suggested'},
      {soname: ['libnvrtc.so.12'], feature: null, description: null, priority: 'required'},
      {soname: ['libpcre2-8.so.0'], feature: null, description: null, priority: 'recommended'},
    ]);
    // The oracle: binutils walks the same notes, with the JSON and its NUL as each note's data.
    expect(readelfNotes(lib)).toEqual([zstd, cuda, pcre].map((j) => ['FDO', Buffer.byteLength(j) + 1, '0x407c0c0a']));
  });

  test('written in assembly (.section .note.dlopen,"a"), with another owner\'s note beside it: only FDO\'s is read', () => {
    const json = '[{"soname":["libcuda.so.1"],"priority":"required","description":"the driver"}]';
    const bytes = Buffer.byteLength(json) + 1;
    const lib = buildLib({out: join(tmp.dir, 'libasm.so'), source: `
__asm__(".section .note.dlopen,\\"a\\"\\n.balign 4\\n"
        ".long 4\\n.long 4\\n.long 0x407c0c0a\\n.asciz \\"XYZ\\"\\n.long 0\\n"
        ".long 4\\n.long ${bytes}\\n.long 0x407c0c0a\\n.asciz \\"FDO\\"\\n.byte ${[...Buffer.from(json), 0].join(',')}\\n.balign 4\\n.previous\\n");
int f(void) { return 0; }
`});
    expect(readelfNotes(lib).map(([owner]) => owner)).toEqual(['XYZ', 'FDO']);
    expect(readDlopenNotes(lib)).toEqual([{soname: ['libcuda.so.1'], feature: null, description: 'the driver', priority: 'required'}]);
  });

  test('a library without the section declares nothing; a note whose JSON breaks the specification is an ElfError that says what and where', () => {
    const plain = buildLib({out: join(tmp.dir, 'libplain.so'), source: 'int f(void) { return 0; }\n'});
    expect(readDlopenNotes(plain)).toEqual([]);
    const bad = buildLib({out: join(tmp.dir, 'libbad.so'), source: `${NOTE_MACRO}
ELF_NOTE_DLOPEN(${cString('[{"soname":"libcuda.so.1"}]')}, n1);
int f(void) { return 0; }
`});
    expect(() => readDlopenNotes(bad)).toThrow(ElfError);
    expect(() => readDlopenNotes(bad)).toThrow(`${bad}: its .note.dlopen note (owner FDO, type 0x407c0c0a) entry 0 has no "soname" array of names`);
    const priority = buildLib({out: join(tmp.dir, 'libprio.so'), source: `${NOTE_MACRO}
ELF_NOTE_DLOPEN(${cString('[{"soname":["libx.so.1"],"priority":"optional"}]')}, n1);
int f(void) { return 0; }
`});
    expect(() => readDlopenNotes(priority)).toThrow('entry 0\'s "priority" is "optional", not one of required, recommended, suggested');
  });
});
