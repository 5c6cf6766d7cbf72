import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync, spawn} from 'node:child_process';
import {lstatSync, mkdirSync, readFileSync, readlinkSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {Readable} from 'node:stream';
import {pipeline} from 'node:stream/promises';
import {TarGuard} from '../../../src/core/remote/tar-guard.js';
import {makeTar, type TarEntry} from '../../helpers/mirror.js';
import {makeTempDir} from '../../helpers/tmp.js';

let tmp: {dir: string; cleanup: () => void};
beforeAll(() => {
  tmp = makeTempDir('cudaenv-guard-');
});
afterAll(() => tmp.cleanup());

/** Runs bytes through the guard (in odd-sized chunks, as xz delivers them) into GNU tar in `dest`. */
async function guardInto(tarBytes: Buffer, dest: string): Promise<{error?: Error; guard: TarGuard}> {
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
