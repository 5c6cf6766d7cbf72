import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {mkdirSync, renameSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {realpathIn, withLinkAnswers} from '../../../../../src/core/elf/read/machine/sysroot.js';
import {makeTempDir, type TempDir} from '../../../../helpers/tmp.js';

/**
 * realpathIn keeps what lstat and readlink said while a check runs (withLinkAnswers: a cached check
 * of an image resolved the same directories for every fact), and asks again outside one. Real links
 * in a directory standing for an image: an absolute target restarts at the image's root.
 */
let tmp: TempDir;
let root: string;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-link-answers-');
  root = join(tmp.dir, 'image');
  for (const d of ['usr/lib/a', 'usr/lib/b', 'lib']) mkdirSync(join(root, d), {recursive: true});
  writeFileSync(join(root, 'usr/lib/a/libx.so.1'), '');
  writeFileSync(join(root, 'usr/lib/b/libx.so.1'), '');
  symlinkSync('/usr/lib/a', join(root, 'lib/current'));
});
afterAll(() => tmp.cleanup());

const repoint = (to: string) => {
  symlinkSync(to, join(root, 'lib/current.new'));
  renameSync(join(root, 'lib/current.new'), join(root, 'lib/current'));
};

test('outside a check every call asks again; inside one the first answers hold until the last check running ends', async () => {
  const path = join(root, 'lib/current/libx.so.1');
  repoint('/usr/lib/a');
  expect(realpathIn(root, path)).toBe(join(root, 'usr/lib/a/libx.so.1'));
  repoint('/usr/lib/b');
  expect(realpathIn(root, path)).toBe(join(root, 'usr/lib/b/libx.so.1'));
  await withLinkAnswers(async () => {
    expect(realpathIn(root, path)).toBe(join(root, 'usr/lib/b/libx.so.1'));
    repoint('/usr/lib/a');
    // The answers of this check: the link as it first read it.
    expect(realpathIn(root, path)).toBe(join(root, 'usr/lib/b/libx.so.1'));
    await withLinkAnswers(async () => {
      expect(realpathIn(root, path)).toBe(join(root, 'usr/lib/b/libx.so.1'));
    });
    // An inner check ending leaves the outer one's answers.
    expect(realpathIn(root, path)).toBe(join(root, 'usr/lib/b/libx.so.1'));
    expect(realpathIn(root, join(root, 'lib/missing'))).toBeUndefined();
  });
  expect(realpathIn(root, path)).toBe(join(root, 'usr/lib/a/libx.so.1'));
  // Even when the check fails.
  await expect(withLinkAnswers(async () => {
    realpathIn(root, path);
    throw new Error('failed');
  })).rejects.toThrow('failed');
  repoint('/usr/lib/b');
  expect(realpathIn(root, path)).toBe(join(root, 'usr/lib/b/libx.so.1'));
});
