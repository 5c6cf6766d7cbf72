import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {mkdirSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {displayPath, sysPath, sysRealpath} from '../../../src/core/doctor/sysroot.js';
import {makeTempDir} from '../../helpers/tmp.js';

describe('CUDAENV_SYSROOT paths', () => {
  let tmp: {dir: string; cleanup: () => void};
  let root: string;
  beforeEach(() => {
    tmp = makeTempDir();
    root = join(tmp.dir, 'sys');
    mkdirSync(join(root, 'usr/local/cuda-12.4/compat'), {recursive: true});
  });
  afterEach(() => tmp.cleanup());

  test('system paths are read under the root; paths already inside it stay', () => {
    expect(sysPath({sysroot: root}, '/etc/ld.so.cache')).toBe(join(root, 'etc/ld.so.cache'));
    expect(sysPath({sysroot: root}, join(root, 'etc/x'))).toBe(join(root, 'etc/x'));
    expect(sysPath({sysroot: ''}, '/etc/x')).toBe('/etc/x');
    expect(displayPath({sysroot: root}, join(root, 'usr/local'))).toBe('/usr/local');
  });

  test('links resolve inside the root at any depth: absolute targets restart there, .. stops there, loops fail', () => {
    symlinkSync('/usr/local/cuda-12.4', join(root, 'usr/local/cuda'));
    symlinkSync('../../../../../usr/local/cuda', join(root, 'usr/local/up'));
    symlinkSync('loop2', join(root, 'usr/local/loop1'));
    symlinkSync('loop1', join(root, 'usr/local/loop2'));
    const ctx = {sysroot: root};
    expect(sysRealpath(ctx, '/usr/local/cuda')).toBe(join(root, 'usr/local/cuda-12.4'));
    expect(sysRealpath(ctx, '/usr/local/cuda/compat')).toBe(join(root, 'usr/local/cuda-12.4/compat'));
    expect(sysRealpath(ctx, join(root, 'usr/local/cuda/compat'))).toBe(join(root, 'usr/local/cuda-12.4/compat'));
    expect(sysRealpath(ctx, '/usr/local/up/compat')).toBe(join(root, 'usr/local/cuda-12.4/compat'));
    expect(sysRealpath(ctx, '/usr/local/loop1')).toBeUndefined();
    expect(sysRealpath(ctx, '/usr/local/missing')).toBeUndefined();
  });
});
