import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, mkdirSync, readFileSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {checkLibraries} from '../../../src/core/elf/index.js';
import {mountHolding, noexecMountOf, parseMountinfo} from '../../../src/core/elf/read/machine/mounts.js';
import {CAN_MOUNT_TMPFS, NEEDS} from '../../helpers/capabilities.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {buildDlopenDriver, buildLib, HAVE_GCC} from './fixtures.js';

/**
 * A mount hidden by another mounted over a directory above it holds nothing: the path walk never
 * reaches it, though its mount point is still listed in /proc/self/mountinfo and is the longest
 * prefix of the paths under it. Real tmpfs mounts (root only), stacked both ways; the kernel
 * (st_dev of the file, exec of a mapping through the real loader) is the oracle.
 *
 * Its own file: mounts.ts reads mountinfo once per process, so these mounts must exist before
 * the first question, which another file's tests would already have asked.
 */
let tmp: {dir: string; cleanup: () => void};
const stacks: string[] = [];
let hiddenNoexec: string;
let hiddenExec: string;
let hiddenUnder: string;
let driver: string;

const env = () => ({PATH: process.env.PATH});

function mount(at: string, options: string): void {
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `${options}size=8m`, 'tmpfs', at], {encoding: 'utf8'});
  if (m.status !== 0) throw new Error(`cannot mount a tmpfs at ${at}: ${m.stderr}`);
}

/** <dir>/a mounted `lower`, <dir>/a/b `inner`, then <dir>/a again `upper` over both; libd.so at <dir>/a/b in the upper one. */
function stack(dir: string, lower: string, inner: string, upper: string, good: string): string {
  const a = join(dir, 'a');
  mkdirSync(a, {recursive: true});
  stacks.push(a);
  mount(a, lower);
  mkdirSync(join(a, 'b'));
  mount(join(a, 'b'), inner);
  mount(a, upper);
  mkdirSync(join(a, 'b'));
  const lib = join(a, 'b', 'libd.so');
  copyFileSync(good, lib);
  return lib;
}

/** The mount ID st_dev of `path` belongs to, from mountinfo's major:minor (tmpfs devices are unique). */
function kernelMountPoint(path: string): string {
  const dev = statSync(path, {bigint: true}).dev;
  const major = Number(((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn));
  const minor = Number((dev & 0xffn) | ((dev >> 12n) & ~0xffn));
  const line = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.split(' ')[2] === `${major}:${minor}`);
  return line!.split(' ')[4];
}

describeIf(HAVE_GCC && CAN_MOUNT_TMPFS, HAVE_GCC ? NEEDS.tmpfs : NEEDS.tool('gcc'))('noexec mounts under a later mount', () => {
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-overmount-');
    const good = buildLib({out: join(tmp.dir, 'good', 'libd.so'), soname: 'libd.so', source: 'int d(void){return 1;}\n'});
    // A noexec scratch mount inside a directory an exec file system was later mounted over ...
    hiddenNoexec = stack(join(tmp.dir, 'x'), '', 'noexec,', '', good);
    // ... and an exec mount inside one a noexec file system was later mounted over.
    hiddenExec = stack(join(tmp.dir, 'y'), '', '', 'noexec,', good);
    // A noexec mount at z/a/b first, then an exec file system at z/a: both children of the same
    // mount, the deeper one hidden under the shallower.
    const za = join(tmp.dir, 'z', 'a');
    mkdirSync(join(za, 'b'), {recursive: true});
    stacks.push(za, join(za, 'b'));
    mount(join(za, 'b'), 'noexec,');
    mount(za, '');
    mkdirSync(join(za, 'b'));
    hiddenUnder = join(za, 'b', 'libd.so');
    copyFileSync(good, hiddenUnder);
    driver = buildDlopenDriver(join(tmp.dir, 'driver'));
  });
  afterAll(() => {
    // Lazy unmounts from the top: each takes the upper mount, then the lower one with the inner.
    for (const a of stacks) for (let i = 0; i < 3; i++) spawnSync('umount', ['-l', a]);
    tmp?.cleanup();
  });

  test('the premise: both inner mount points are still listed, and the kernel maps what the upper mount says', () => {
    const points = parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8')).map((m) => m.point);
    expect(points).toContain(join(tmp.dir, 'x', 'a', 'b'));
    expect(points).toContain(join(tmp.dir, 'y', 'a', 'b'));
    expect(points).toContain(join(tmp.dir, 'z', 'a', 'b'));
    expect(kernelMountPoint(hiddenNoexec)).toBe(join(tmp.dir, 'x', 'a'));
    expect(kernelMountPoint(hiddenUnder)).toBe(join(tmp.dir, 'z', 'a'));
    expect(spawnSync(driver, [hiddenNoexec], {encoding: 'utf8', env: env()}).stdout).toBe('OK\n');
    expect(spawnSync(driver, [hiddenUnder], {encoding: 'utf8', env: env()}).stdout).toBe('OK\n');
    expect(spawnSync(driver, [hiddenExec], {encoding: 'utf8', env: env()}).stdout).toBe(`ERR ${hiddenExec}: failed to map segment from shared object\n`);
  });

  test('the mount that holds each file is the one the kernel reached, not the longest listed prefix', () => {
    const list = parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'));
    for (const lib of [hiddenNoexec, hiddenExec, hiddenUnder]) expect(mountHolding(list, lib)?.point).toBe(kernelMountPoint(lib));
    expect(mountHolding(list, '/proc/self')?.point).toBe('/proc');
    expect(noexecMountOf(hiddenNoexec)).toBeNull();
    expect(noexecMountOf(hiddenUnder)).toBeNull();
    expect(noexecMountOf(hiddenExec)).toBe(join(tmp.dir, 'y', 'a'));
  });

  test('the check agrees with the real dlopen on both', async () => {
    for (const lib of [hiddenNoexec, hiddenUnder]) expect((await checkLibraries({targets: [lib], exe: driver, ldLibraryPath: undefined, strict: true})).problems).toEqual([]);
    const report = await checkLibraries({targets: [hiddenExec], exe: driver, ldLibraryPath: undefined, strict: true});
    expect(report.problems.map((p) => p.kind)).toEqual(['noexec-mount']);
    expect(report.problems[0].summary).toContain(`(${join(tmp.dir, 'y', 'a')} is mounted noexec)`);
  });
});

test('on this machine\'s own mounts, the mount found for each listed mount point has the device the kernel reports for it', () => {
  const text = readFileSync('/proc/self/mountinfo', 'utf8');
  const list = parseMountinfo(text);
  const devOf = new Map<number, string>();
  const skip = new Set<string>();
  for (const line of text.split('\n')) {
    const f = line.split(' ');
    if (f.length < 6) continue;
    devOf.set(Number(f[0]), f[2]);
    // autofs points mount on access; /proc and /sys hold the kernel's own, some of them unreadable.
    const fstype = f[f.indexOf('-') + 1];
    if (fstype === 'autofs' || /^\/(proc|sys)(\/|$)/.test(f[4])) skip.add(f[4]);
  }
  let compared = 0;
  for (const m of list) {
    if (skip.has(m.point) || m.point.includes('\n')) continue;
    let dev: bigint;
    try {
      dev = statSync(m.point, {bigint: true}).dev;
    } catch {
      continue;
    }
    const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
    const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
    expect([m.point, devOf.get(mountHolding(list, m.point)!.id)]).toEqual([m.point, `${major}:${minor}`]);
    compared++;
  }
  expect(compared).toBeGreaterThan(0);
});
