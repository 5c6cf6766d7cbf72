import {expect, test} from '@jest/globals';
import {formatProblems} from '../../../../src/core/elf/explain/format-report.js';
import type {CheckReport} from '../../../../src/core/elf/report-types.js';

/**
 * Under CUDAENV_SYSROOT an object's path may be a link of the image that leads nowhere on the host
 * (CheckedObject.file, set by check.ts; the real image case is in test/core/elf/sysroot-links.test.ts):
 * the `picked:` line adds the file it names, as the tree does. Issue 37, 2f ("one message prints a host
 * path that does not exist").
 */
test('picked: a path that leads nowhere on the host is followed by the file it names in the image', () => {
  const link = '/img/lib/x86_64-linux-gnu/libcuda.so.1';
  const file = '/img/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.550.163.01';
  const report: CheckReport = {
    ok: false, checked: ['/img/usr/lib/x86_64-linux-gnu/libcudart.so.12'], skipped: [],
    objects: [{path: link, file, soname: 'libcuda.so.1', needed: []}, {path: '/img/usr/lib/x86_64-linux-gnu/libcudart.so.12', soname: 'libcudart.so.12', needed: []}],
    problems: [{kind: 'driver-too-old', object: '/img/usr/lib/x86_64-linux-gnu/libcudart.so.12', library: 'libcuda.so.1', version: null, symbol: null,
      chosen: `${link} (ld.so.cache (/img/etc/ld.so.cache))`, shadowed: null, summary: 's', explanation: 'e', fix: null}],
  };
  expect(formatProblems(report)).toContain(`  picked:   ${link} -> ${file} (ld.so.cache (/img/etc/ld.so.cache))`);
  // A path of its own on the host is left as it is.
  const plain = {...report, objects: report.objects.map((o) => ({...o, file: undefined}))};
  expect(formatProblems(plain)).toContain(`  picked:   ${link} (ld.so.cache (/img/etc/ld.so.cache))`);
});
