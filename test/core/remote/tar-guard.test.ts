import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync, spawn} from 'node:child_process';
import {lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {Readable} from 'node:stream';
import {pipeline} from 'node:stream/promises';
import {ArchiveNoRoom, ArchiveRefused, ArchiveTooLarge, TarGuard} from '../../../src/core/remote/tar-guard.js';
import {makeTar, type TarEntry} from '../../helpers/mirror.js';
import {makeTempDir} from '../../helpers/tmp.js';

let tmp: {dir: string; cleanup: () => void};
beforeAll(() => {
  tmp = makeTempDir('cudaenv-guard-');
});
afterAll(() => tmp.cleanup());

/** What the guard passes on from `bytes` fed to `pass` in pieces of `size`, or why it refused. */
function guardBytes(bytes: Buffer, size: number): {out: Buffer; error?: string} {
  const guard = new TarGuard();
  const out: Buffer[] = [];
  try {
    for (let i = 0; i < bytes.length; i += size) guard.pass(bytes.subarray(i, i + size), (b) => out.push(Buffer.from(b)));
    guard.finish();
    return {out: Buffer.concat(out)};
  } catch (error) {
    return {out: Buffer.concat(out), error: (error as Error).message};
  }
}

/**
 * Runs bytes through the guard (in odd-sized chunks, as xz delivers them) into GNU tar in `dest`.
 * First checks that the guard's verdict and output do not depend on how the stream is cut: in
 * whole blocks, in pipe-sized pieces and in one piece (headers inside a chunk, passed on as
 * slices of it) it must pass on the same bytes, or refuse with the same error.
 */
async function guardInto(tarBytes: Buffer, dest: string): Promise<{error?: Error; guard: TarGuard}> {
  const odd = guardBytes(tarBytes, 333);
  for (const size of [512, 8192, 65536, tarBytes.length]) {
    const other = guardBytes(tarBytes, size);
    expect(other.error).toBe(odd.error);
    if (odd.error === undefined) expect(other.out.equals(odd.out)).toBe(true);
  }
  mkdirSync(dest, {recursive: true});
  const guard = new TarGuard();
  const chunks: Buffer[] = [];
  for (let i = 0; i < tarBytes.length; i += 333) chunks.push(tarBytes.subarray(i, i + 333));
  const tar = spawn('tar', ['-x', '-f', '-', '-C', dest, '--strip-components=1', '--no-same-owner'], {stdio: ['pipe', 'ignore', 'pipe']});
  const exited = new Promise<number>((r) => tar.on('close', (c) => r(c ?? 1)));
  tar.stdin.on('error', () => undefined);
  try {
    await pipeline(Readable.from(chunks), guard, tar.stdin);
    const code = await exited;
    return code === 0 ? {guard} : {error: new Error(`tar exited ${code}`), guard};
  } catch (error) {
    tar.kill();
    await exited;
    return {error: error as Error, guard};
  }
}

const T = 'pkg-linux-x86_64-1.0-archive';
const base: TarEntry[] = [{name: `${T}/`, type: '5'}, {name: `${T}/lib/`, type: '5'}];

describe('TarGuard in front of GNU tar', () => {
  test('GNU tar archives (long names, pax headers, link chains, hard links) pass intact', async () => {
    const src = join(tmp.dir, 'gnu-src', T);
    mkdirSync(join(src, 'lib'), {recursive: true});
    writeFileSync(join(src, 'lib', 'libcudart.so.12.4.127'), 'ELF');
    symlinkSync('libcudart.so.12.4.127', join(src, 'lib', 'libcudart.so.12'));
    symlinkSync('libcudart.so.12', join(src, 'lib', 'libcudart.so'));
    const deep = join(src, 'include', 'x'.repeat(90), 'y'.repeat(90));
    mkdirSync(deep, {recursive: true});
    writeFileSync(join(deep, `${'z'.repeat(120)}.h`), 'deep');
    execFileSync('ln', [join(src, 'lib', 'libcudart.so.12.4.127'), join(src, 'lib', 'hardlinked')]);
    for (const format of ['gnu', 'pax']) {
      const bytes = execFileSync('tar', ['-C', join(tmp.dir, 'gnu-src'), `--format=${format}`, '-cf', '-', T], {maxBuffer: 1 << 26});
      const dest = join(tmp.dir, `gnu-out-${format}`);
      const {error, guard} = await guardInto(bytes, dest);
      expect(error).toBeUndefined();
      expect(readlinkSync(join(dest, 'lib', 'libcudart.so'))).toBe('libcudart.so.12');
      expect(readlinkSync(join(dest, 'lib', 'libcudart.so.12'))).toBe('libcudart.so.12.4.127');
      expect(readFileSync(join(dest, 'lib', 'libcudart.so.12.4.127'), 'utf8')).toBe('ELF');
      expect(statSync(join(dest, 'lib', 'hardlinked')).ino).toBe(statSync(join(dest, 'lib', 'libcudart.so.12.4.127')).ino);
      expect(readFileSync(join(dest, 'include', 'x'.repeat(90), 'y'.repeat(90), `${'z'.repeat(120)}.h`), 'utf8')).toBe('deep');
      expect(guard.stats.symlinks).toBe(2);
      expect(guard.stats.top).toBe(T);
    }
  });

  test('links inside the root are fine, also through other links', async () => {
    const dest = join(tmp.dir, 'inside');
    const {error} = await guardInto(makeTar([...base,
      {name: `${T}/lib64`, type: '2', linkname: 'lib'},
      {name: `${T}/lib/sub/`, type: '5'},
      {name: `${T}/lib/d`, type: '2', linkname: 'sub'},
      {name: `${T}/lib/d/file`, data: 'through a link'},
      {name: `${T}/lib/up`, type: '2', linkname: '../lib64/d/file'},
      {name: `${T}/lib/hard`, type: '1', linkname: `${T}/lib/d/file`},
    ]), dest);
    expect(error).toBeUndefined();
    expect(readFileSync(join(dest, 'lib', 'sub', 'file'), 'utf8')).toBe('through a link');
    expect(readFileSync(join(dest, 'lib', 'up'), 'utf8')).toBe('through a link');
    expect(lstatSync(join(dest, 'lib', 'hard')).isFile()).toBe(true);
  });

  test.each<[string, TarEntry[], RegExp]>([
    ['absolute path', [{name: '/etc/cudaenv-x', data: 'x'}], /absolute path \/etc\/cudaenv-x/],
    ['dot-dot', [{name: `${T}/lib/../../x`, data: 'x'}], /climbs with \.\./],
    ['second top directory', [{name: 'other/x', data: 'x'}], /outside the archive's top directory/],
    ['absolute symlink', [{name: `${T}/lib/etc`, type: '2', linkname: '/etc'}], /symlink to the absolute path \/etc/],
    ['escaping symlink', [{name: `${T}/lib/e`, type: '2', linkname: '../..'}], /symlink to \.\.\/\.\., outside/],
    ['escape through a chain', [{name: `${T}/a`, type: '2', linkname: 'lib'}, {name: `${T}/lib/b`, type: '2', linkname: '../a/../..'}], /outside the archive/],
    ['write through an escaping link', [{name: `${T}/lib/l`, type: '2', linkname: '../../../tmp'}, {name: `${T}/lib/l/owned`, data: 'x'}], /symlink to \.\.\/\.\.\/\.\.\/tmp, outside/],
    ['hard link outside', [{name: `${T}/lib/h`, type: '1', linkname: `${T}/../../etc/passwd`}], /climbs with \.\./],
    ['hard link to a symlink', [{name: `${T}/lib/s`, type: '2', linkname: 'x'}, {name: `${T}/h`, type: '1', linkname: `${T}/lib/s`}], /not a regular file of the archive/],
    ['symlink loop', [{name: `${T}/a`, type: '2', linkname: 'b'}, {name: `${T}/b`, type: '2', linkname: 'a'}, {name: `${T}/a/x`, data: 'x'}], /loop/],
    ['char device', [{name: `${T}/lib/tty`, type: '3'}], /device file/],
    ['fifo', [{name: `${T}/lib/p`, type: '6'}], /FIFO/],
  ])('refuses %s before tar sees it', async (_what, entries, why) => {
    const dest = join(tmp.dir, `bad-${Math.random().toString(36).slice(2)}`);
    const {error} = await guardInto(makeTar([...base, ...entries]), dest);
    expect(error?.message).toMatch(why);
    expect(() => lstatSync('/etc/cudaenv-x')).toThrow();
  });

  test('a corrupt header checksum is refused, not skipped', async () => {
    const bytes = makeTar([...base, {name: `${T}/f`, data: 'x'}]);
    bytes[1024 + 10] ^= 0xff; // flip a byte of the third header's name
    const {error} = await guardInto(bytes, join(tmp.dir, 'corrupt'));
    expect(error?.message).toMatch(/bad checksum/);
  });

  test('setuid, setgid and sticky bits are cleared', async () => {
    const dest = join(tmp.dir, 'modes');
    const {error} = await guardInto(makeTar([...base, {name: `${T}/bin/`, type: '5', mode: 0o1777}, {name: `${T}/bin/s`, data: 'x', mode: 0o6755}]), dest);
    expect(error).toBeUndefined();
    expect(statSync(join(dest, 'bin', 's')).mode & 0o7777).toBe(0o755);
    expect(statSync(join(dest, 'bin')).mode & 0o7000).toBe(0);
  });
});

/** pax extended-header records: "<len> <key>=<value>\n", len counting the whole record. */
function paxRecords(records: Record<string, string>): string {
  let out = '';
  for (const [key, value] of Object.entries(records)) {
    const body = ` ${key}=${value}\n`;
    let len = Buffer.byteLength(body);
    while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body);
    out += `${len}${body}`;
  }
  return out;
}
const pax = (records: Record<string, string>, type: 'x' | 'g' = 'x'): TarEntry => ({name: `${T}/PaxHeaders/entry`, type, data: paxRecords(records)});
/** GNU long names: a ././@LongLink entry of type L (name) or K (link target), the string NUL-terminated. */
const longName = (name: string): TarEntry => ({name: '././@LongLink', type: 'L', data: `${name}\0`});
const longLink = (target: string): TarEntry => ({name: '././@LongLink', type: 'K', data: `${target}\0`});

/** makeTar's entries with GNU headers (magic "ustar  "), as GNU tar writes them around ././@LongLink. */
function gnuTar(entries: TarEntry[]): Buffer {
  const blocks = entries.map((e) => {
    const one = makeTar([e]);
    const b = Buffer.from(one.subarray(0, one.length - 1024));
    b.write('ustar  \0', 257, 'latin1');
    b.fill(0x20, 148, 156);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += b[i]!;
    b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    return b;
  });
  return Buffer.concat([...blocks, Buffer.alloc(1024)]);
}

describe('TarGuard reads the names tar will use: pax path/linkpath and GNU long names', () => {
  const DEEP = `${T}/include/${'d'.repeat(60)}/${'e'.repeat(60)}`; // over ustar's 100 bytes
  const SHORT = `${T}/lib/benign`;

  test('controls: GNU tar honours them (so a guard reading only the ustar fields would be fooled)', async () => {
    const dest = join(tmp.dir, 'controls');
    const {error} = await guardInto(makeTar([...base,
      pax({path: `${T}/lib/renamed-by-pax`}), {name: SHORT, data: 'pax'},
      {name: `${T}/include/`, type: '5'}, {name: `${T}/include/${'d'.repeat(60)}/`, type: '5'},
      pax({linkpath: '../lib/renamed-by-pax'}), {name: `${T}/include/l`, type: '2', linkname: 'benign-target'},
    ]), dest);
    expect(error).toBeUndefined();
    expect(readFileSync(join(dest, 'lib', 'renamed-by-pax'), 'utf8')).toBe('pax');
    expect(() => lstatSync(join(dest, 'lib', 'benign'))).toThrow();
    expect(readlinkSync(join(dest, 'include', 'l'))).toBe('../lib/renamed-by-pax');
    const gdest = join(tmp.dir, 'controls-gnu');
    const g = await guardInto(gnuTar([...base,
      {name: `${T}/include/`, type: '5'}, {name: `${T}/include/${'d'.repeat(60)}/`, type: '5'},
      longName(DEEP), {name: SHORT, data: 'long'},
      longLink(`../${'x'.repeat(120)}`), {name: `${T}/lib/lk`, type: '2', linkname: 'short'},
    ]), gdest);
    expect(g.error).toBeUndefined();
    expect(readFileSync(join(gdest, 'include', 'd'.repeat(60), 'e'.repeat(60)), 'utf8')).toBe('long');
    expect(readlinkSync(join(gdest, 'lib', 'lk'))).toBe(`../${'x'.repeat(120)}`);
  });

  // Each case: the archive (given the test's own directory, for absolute paths inside it), the refusal, the refused name.
  test.each<[string, (root: string) => Buffer, RegExp]>([
    ['pax path with ..', () => makeTar([...base, pax({path: `${T}/lib/../../evil`}), {name: SHORT, data: 'x'}]),
      /refused entry "pkg-linux-x86_64-1\.0-archive\/lib\/\.\.\/\.\.\/evil": the path .* climbs with \.\./],
    ['pax path absolute', (root) => makeTar([...base, pax({path: `${root}/pax-abs`}), {name: SHORT, data: 'x'}]),
      /refused entry ".*\/pax-abs": the absolute path \/.*\/pax-abs/],
    ['pax path in a second top directory', () => makeTar([...base, pax({path: 'other/x'}), {name: SHORT, data: 'x'}]),
      /outside the archive's top directory/],
    ['pax linkpath escaping', () => makeTar([...base, pax({linkpath: '../../../evil'}), {name: `${T}/lib/l`, type: '2', linkname: 'benign'}]),
      /refused entry ".*\/lib\/l": a symlink to \.\.\/\.\.\/\.\.\/evil, outside the archive/],
    ['pax linkpath absolute', (root) => makeTar([...base, pax({linkpath: `${root}/pax-link`}), {name: `${T}/lib/l`, type: '2', linkname: 'benign'}]),
      /a symlink to the absolute path \/.*\/pax-link/],
    ['pax hard-link linkpath climbing', () => makeTar([...base, {name: `${T}/lib/f`, data: 'x'}, pax({linkpath: `${T}/../../etc/passwd`}), {name: `${T}/lib/h`, type: '1', linkname: `${T}/lib/f`}]),
      /climbs with \.\./],
    ['pax path in a global header', () => makeTar([...base, pax({path: `${T}/../evil`}, 'g'), {name: SHORT, data: 'x'}]),
      /a global header that renames entries/],
    ['GNU long name with ..', () => gnuTar([...base, longName(`${DEEP}/../../../../evil`), {name: SHORT, data: 'x'}]),
      /refused entry ".*eeee\/\.\.\/\.\.\/\.\.\/\.\.\/evil": the path .* climbs with \.\./],
    ['GNU long name absolute', (root) => gnuTar([...base, longName(`${root}/${'a'.repeat(110)}`), {name: SHORT, data: 'x'}]),
      /the absolute path \/.*\/a{110}/],
    ['GNU long link escaping', () => gnuTar([...base, longLink(`${'../'.repeat(40)}etc`), {name: `${T}/lib/l`, type: '2', linkname: 'benign'}]),
      /a symlink to (\.\.\/){40}etc, outside the archive/],
    ['GNU long link absolute', (root) => gnuTar([...base, longLink(`${root}/${'b'.repeat(110)}`), {name: `${T}/lib/l`, type: '2', linkname: 'benign'}]),
      /a symlink to the absolute path \/.*\/b{110}/],
    ['GNU long hard link climbing', () => gnuTar([...base, {name: `${T}/lib/f`, data: 'x'}, longLink(`${T}/${'c/'.repeat(50)}${'../'.repeat(52)}passwd`), {name: `${T}/lib/h`, type: '1', linkname: `${T}/lib/f`}]),
      /climbs with \.\./],
    ['a GNU long name followed by no entry', () => gnuTar([...base, longName(`${DEEP}/x`)]),
      /a long-name or pax header is not followed by an entry/],
  ])('refuses %s before tar sees it', async (what, build, why) => {
    const root = join(tmp.dir, `meta-${what.replace(/\W+/g, '-')}`);
    mkdirSync(root);
    const dest = join(root, 'dest');
    const {error} = await guardInto(build(root), dest);
    expect(error?.message).toMatch(why);
    // Nothing reached the disk: the guard stopped the stream before tar got the entry.
    expect(readdirSync(root)).toEqual(['dest']);
    expect(readdirSync(dest).filter((n) => n !== 'lib' && n !== 'include')).toEqual([]);
    expect(() => lstatSync(join(dest, 'lib', 'l'))).toThrow();
    expect(() => lstatSync(join(dest, 'lib', 'benign'))).toThrow();
  });

  test('GNU tar\'s own pax and GNU archives of an escaping long symlink are refused', async () => {
    const src = join(tmp.dir, 'real-long-link');
    mkdirSync(join(src, T, 'lib'), {recursive: true});
    const target = `${'../'.repeat(40)}etc`;
    symlinkSync(target, join(src, T, 'lib', 'escape'));
    for (const format of ['gnu', 'pax']) {
      const bytes = execFileSync('tar', ['-C', src, `--format=${format}`, '-cf', '-', T], {maxBuffer: 1 << 26});
      expect(bytes.includes(format === 'gnu' ? '././@LongLink' : `linkpath=${target}`)).toBe(true);
      const dest = join(tmp.dir, `real-long-link-${format}`);
      const {error} = await guardInto(bytes, dest);
      expect(error?.message).toMatch(new RegExp(`refused entry ".*lib/escape": a symlink to (\\.\\./){40}etc, outside the archive`));
      expect(() => lstatSync(join(dest, 'lib', 'escape'))).toThrow();
    }
  });
});


describe('TarGuard bounds what an archive may expand to (issue 46)', () => {
  const entries: TarEntry[] = [
    {name: 'top/', type: '5'},
    {name: 'top/a', data: Buffer.alloc(3000, 1)},
    {name: 'top/b', data: Buffer.alloc(3000, 2)},
    {name: 'top/c', type: '2', linkname: 'a'},
  ];
  const run = (limits: ConstructorParameters<typeof TarGuard>[0]): {out: Buffer; error?: Error} => {
    const guard = new TarGuard(limits);
    const out: Buffer[] = [];
    try {
      const bytes = makeTar(entries);
      for (let i = 0; i < bytes.length; i += 512) guard.pass(bytes.subarray(i, i + 512), (b) => out.push(Buffer.from(b)));
      guard.finish();
      return {out: Buffer.concat(out)};
    } catch (error) {
      return {out: Buffer.concat(out), error: error as Error};
    }
  };

  test('entries whose declared sizes pass maxBytes are refused at the header that crosses it, before tar sees it', () => {
    const fits = run({maxBytes: 6000});
    expect(fits.error).toBeUndefined();
    const over = run({maxBytes: 5999, maxWhy: 'test limit'});
    expect(over.error).toBeInstanceOf(ArchiveTooLarge);
    expect(over.error!.message).toBe('refused entry "top/b": with it the archive\'s files add up to more than 5999 bytes, test limit');
    // tar got the directory and a (header, data) but never b's header.
    expect(over.out.length).toBe(512 + 512 + 3072);
  });

  test('more than the free space: ArchiveNoRoom (not hostile), with what was needed and what is free', () => {
    const r = run({freeBytes: 4000});
    expect(r.error).toBeInstanceOf(ArchiveNoRoom);
    expect(r.error).toMatchObject({entry: 'top/b', needed: 6000, free: 4000});
    expect(r.error).not.toBeInstanceOf(ArchiveRefused);
  });

  test('a refused name with control characters is shown escaped (no terminal escape reaches a message)', () => {
    const {error} = guardBytes(makeTar([{name: 'top/', type: '5'}, {name: 'top/\u001b]0;pwned\u0007x', type: '2', linkname: '/etc/\u009b31m'}]), 512);
    expect(error).toBe('refused entry "top/\\u001b]0;pwned\\u0007x": a symlink to the absolute path /etc/\\x9b31m');
    // eslint-disable-next-line no-control-regex
    expect(error).not.toMatch(/[\x00-\x1f\x7f-\x9f]/);
  });
});
