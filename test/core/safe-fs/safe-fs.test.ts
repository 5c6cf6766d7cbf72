import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {openDir, readFileSafely, removeSafely, symlinkSafely, temporaryName, writeFileSafely, writeIn} from '../../../src/core/safe-fs/index.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {testIf} from '../../helpers/skip.js';
import {CAN_MOUNT_NAMESPACE, IS_ROOT, NEEDS} from '../../helpers/capabilities.js';
import {REPO_ROOT} from '../../helpers/cli.js';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
});
afterEach(() => cleanup());

describe('writing a file', () => {
  test('temporary names are random: no pid, no time, never the same twice', () => {
    const names = new Set(Array.from({length: 200}, () => temporaryName('index')));
    expect(names.size).toBe(200);
    for (const n of names) {
      expect(n).toMatch(/^\.index\.[0-9a-f]{16}\.tmp$/);
      expect(n).not.toContain(String(process.pid));
    }
  });

  test('the content appears whole with the mode asked for, and no temporary file is left', () => {
    writeFileSafely(join(dir, 'a', 'b', 'shim'), '#!/bin/sh\n', {mode: 0o755});
    expect(readFileSync(join(dir, 'a', 'b', 'shim'), 'utf8')).toBe('#!/bin/sh\n');
    expect(statSync(join(dir, 'a', 'b', 'shim')).mode & 0o777).toBe(0o755);
    expect(readdirSync(join(dir, 'a', 'b'))).toEqual(['shim']);
  });

  test('a link planted at the name is replaced, never followed', () => {
    writeFileSync(join(dir, 'victim'), 'private\n');
    symlinkSync(join(dir, 'victim'), join(dir, 'index'));
    writeFileSafely(join(dir, 'index'), 'new\n');
    expect(readFileSync(join(dir, 'victim'), 'utf8')).toBe('private\n');
    expect(lstatSync(join(dir, 'index')).isFile()).toBe(true);
  });

  test('exclusive: a file (or a link) already there is kept, and the call says so', () => {
    writeFileSync(join(dir, 'victim'), 'private\n');
    symlinkSync(join(dir, 'victim'), join(dir, 'record.json'));
    expect(writeFileSafely(join(dir, 'record.json'), 'mine\n', {exclusive: true})).toBe(false);
    expect(readFileSync(join(dir, 'victim'), 'utf8')).toBe('private\n');
    expect(writeFileSafely(join(dir, 'other.json'), 'mine\n', {exclusive: true})).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['other.json', 'record.json', 'victim']);
  });

  test('a directory swapped for a link after it was opened: the write lands in the directory that was checked', () => {
    mkdirSync(join(dir, 'store'));
    mkdirSync(join(dir, 'elsewhere'));
    const held = openDir(join(dir, 'store'));
    try {
      renameSync(join(dir, 'store'), join(dir, 'store.moved'));
      symlinkSync(join(dir, 'elsewhere'), join(dir, 'store'));
      writeIn(held, 'index', 'x\n');
    } finally {
      held.close();
    }
    expect(readdirSync(join(dir, 'elsewhere'))).toEqual([]);
    expect(readFileSync(join(dir, 'store.moved', 'index'), 'utf8')).toBe('x\n');
  });

  test('an error names the file meant, never /proc/self/fd/N or a temporary name', () => {
    mkdirSync(join(dir, 'index'));
    writeFileSync(join(dir, 'index', 'x'), '');
    let error: NodeJS.ErrnoException | undefined;
    try {
      writeFileSafely(join(dir, 'index'), 'x');
    } catch (e) {
      error = e as NodeJS.ErrnoException;
    }
    expect(error?.message).toContain(`'${join(dir, 'index')}'`);
    expect(error?.message).not.toMatch(/proc\/self|\.tmp/);
    expect(error?.path).toBe(join(dir, 'index'));
    expect(readdirSync(dir)).toEqual(['index']);
  });

  test('a link is swapped atomically, and removing a link leaves what it names', () => {
    writeFileSync(join(dir, 'target'), 't');
    symlinkSafely(join(dir, 'cuda'), join(dir, 'target'));
    symlinkSafely(join(dir, 'cuda'), '/nowhere');
    expect(lstatSync(join(dir, 'cuda')).isSymbolicLink()).toBe(true);
    symlinkSync(join(dir, 'target'), join(dir, 'l2'));
    removeSafely(join(dir, 'l2'));
    expect(existsSync(join(dir, 'target'))).toBe(true);
    expect(existsSync(join(dir, 'l2'))).toBe(false);
    removeSafely(join(dir, 'no', 'such'));
  });
});

describe('as root, only directories root alone can change', () => {
  testIf(IS_ROOT, NEEDS.root)('a directory of another user on the way is refused, before anything is written', () => {
    mkdirSync(join(dir, 'user', 'store'), {recursive: true});
    chownSync(join(dir, 'user'), 65534, 65534);
    expect(() => writeFileSafely(join(dir, 'user', 'store', 'links', 'r.json'), '{}')).toThrow(
      `refusing to write ${join(dir, 'user', 'store', 'links', 'r.json')} as root: ${join(dir, 'user')} is not safe (it is owned by uid 65534, not root)`);
    expect(existsSync(join(dir, 'user', 'store', 'links'))).toBe(false);
  });

  testIf(IS_ROOT, NEEDS.root)('a link in a directory of another user is not followed; one in root\'s own is', () => {
    mkdirSync(join(dir, 'user'));
    mkdirSync(join(dir, 'root-dir'));
    chownSync(join(dir, 'user'), 65534, 65534);
    symlinkSync(join(dir, 'root-dir'), join(dir, 'user', 'links'));
    expect(() => writeFileSafely(join(dir, 'user', 'links', 'r.json'), '{}')).toThrow('is not safe');
    symlinkSync(join(dir, 'root-dir'), join(dir, 'root-link'));
    writeFileSafely(join(dir, 'root-link', 'r.json'), '{}');
    expect(readFileSync(join(dir, 'root-dir', 'r.json'), 'utf8')).toBe('{}');
  });

  testIf(IS_ROOT, NEEDS.root)('writable by a group or by all is refused; root\'s sticky directory (/tmp) is not', () => {
    mkdirSync(join(dir, 'g'));
    chownSync(join(dir, 'g'), 0, 65534);
    chmodSync(join(dir, 'g'), 0o775);
    expect(() => writeFileSafely(join(dir, 'g', 'f'), 'x')).toThrow('it is writable by group 65534');
    mkdirSync(join(dir, 'w'));
    chmodSync(join(dir, 'w'), 0o777);
    expect(() => writeFileSafely(join(dir, 'w', 'f'), 'x')).toThrow('it is writable by every user');
    chmodSync(join(dir, 'w'), 0o1777);
    writeFileSafely(join(dir, 'w', 'f'), 'x');
    expect(statSync(join(dir, 'w', 'f')).uid).toBe(0);
  });
});

describe('without /proc (a container that mounts none)', () => {
  testIf(IS_ROOT && CAN_MOUNT_NAMESPACE, NEEDS.mountNamespace)('writes, links and reads by path, still refusing an unsafe directory as root', () => {
    const script = join(dir, 'w.mjs');
    writeFileSync(script, `const fs = await import(${JSON.stringify(join(REPO_ROOT, 'dist', 'core', 'safe-fs', 'index.js'))});
const [d] = process.argv.slice(2);
fs.writeFileSafely(d + '/a/b/f.json', 'hi');
fs.symlinkSafely(d + '/a/link', '/nowhere');
console.log(fs.readFileSafely(d + '/a/b/f.json', 100).toString());
try { fs.writeFileSafely(d + '/user/x', 'no'); } catch (e) { console.log(e.code); }
`);
    mkdirSync(join(dir, 'user'));
    chownSync(join(dir, 'user'), 65534, 65534);
    const r = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', 'mount -t tmpfs none /proc && exec "$0" "$@"', process.execPath, script, dir], {encoding: 'utf8'});
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('hi\nunsafe-path\n');
    expect(readFileSync(join(dir, 'a', 'b', 'f.json'), 'utf8')).toBe('hi');
    expect(lstatSync(join(dir, 'a', 'link')).isSymbolicLink()).toBe(true);
    expect(existsSync(join(dir, 'user', 'x'))).toBe(false);
  });
});

describe('reading a small file', () => {
  test('a link, a FIFO, /dev/zero and an oversized file are refused at once', () => {
    writeFileSync(join(dir, 'r.json'), '{"a":1}');
    expect(readFileSafely(join(dir, 'r.json'), 100).toString()).toBe('{"a":1}');
    symlinkSync('/dev/zero', join(dir, 'zero.json'));
    expect(() => readFileSafely(join(dir, 'zero.json'), 100)).toThrow(/ELOOP|symbolic link|not a regular file/);
    expect(spawnSync('mkfifo', [join(dir, 'fifo.json')]).status).toBe(0);
    expect(() => readFileSafely(join(dir, 'fifo.json'), 100)).toThrow(`${join(dir, 'fifo.json')} is not a regular file`);
    writeFileSync(join(dir, 'big.json'), 'x'.repeat(101));
    expect(() => readFileSafely(join(dir, 'big.json'), 100)).toThrow(`${join(dir, 'big.json')} is 101 bytes, more than the 100 cudaenv reads from it`);
  });
});
