import {expect, test} from '@jest/globals';
import {formatSkipped} from '../../../../src/core/elf/explain/format-report.js';
import type {CheckReport} from '../../../../src/core/elf/report-types.js';

/**
 * A preload ld.so refuses (issue 37, 2g): the note quotes the ERROR line ld.so prints as every
 * program starts (rtld.c: "object '%s' from %s cannot be preloaded (%s): ignored.") and names what
 * to change. That the model's reasons are ld.so's own is proven against the real loader in
 * test/bin/launcher.test.ts (file too short), noexec-mount.test.ts and loader-glibc-releases.test.ts;
 * the entries and where they were read, in sysroot-links.test.ts. Here: the wording for each source.
 */
const report = (skipped: CheckReport['skipped']): CheckReport => ({ok: true, checked: [], objects: [], problems: [], skipped});

// Before: an /etc/ld.so.preload line was counted among "other files that are not ELF shared objects".
test('an LD_PRELOAD entry and an /etc/ld.so.preload line, each with ld.so\'s line and its own fix', () => {
  const lines = formatSkipped(report([
    {path: '/opt/also-gone/libenv.so: cannot open shared object file', reason: 'LD_PRELOAD entry cannot be preloaded: ignored (as ld.so does)'},
    {path: '/opt/gone/libhook.so: cannot open shared object file', reason: '/etc/ld.so.preload entry cannot be preloaded: ignored (as ld.so does)'},
  ]));
  expect(lines).toEqual([
    'note: LD_PRELOAD names /opt/also-gone/libenv.so, which ld.so cannot preload (cannot open shared object file): programs run without it, each first printing'
      + ' "ERROR: ld.so: object \'/opt/also-gone/libenv.so\' from LD_PRELOAD cannot be preloaded (cannot open shared object file): ignored."; remove it from LD_PRELOAD',
    'note: /etc/ld.so.preload names /opt/gone/libhook.so, which ld.so cannot preload (cannot open shared object file): programs run without it, each first printing'
      + ' "ERROR: ld.so: object \'/opt/gone/libhook.so\' from /etc/ld.so.preload cannot be preloaded (cannot open shared object file): ignored."; remove its line from /etc/ld.so.preload (as root)',
  ]);
});

test('three refused preloads are three notes (each is its own line on every start), not one grouped list', () => {
  const skipped = ['a', 'b', 'c'].map((n) => ({path: `/x/lib${n}.so: file too short`, reason: 'LD_PRELOAD entry cannot be preloaded: ignored (as ld.so does)'}));
  expect(formatSkipped(report(skipped)).map((l) => l.slice(0, 40))).toEqual(['note: LD_PRELOAD names /x/liba.so, which', 'note: LD_PRELOAD names /x/libb.so, which', 'note: LD_PRELOAD names /x/libc.so, which']);
});
