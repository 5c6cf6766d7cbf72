import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chownSync, existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {makeTempDir} from '../../helpers/tmp.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {linkVersion, unlinkTarget, type LinkContext} from '../../../src/core/link/index.js';
import {CudaenvError} from '../../../src/core/errors.js';
import {makeStore} from './fixtures.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {IS_ROOT, NEEDS} from '../../helpers/capabilities.js';

let dir: string;
let cleanup: () => void;
let ctx: LinkContext;
let target: string;
const v = (label: string) => join(dir, 'store', 'versions', label);

beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
  const paths = makeStore(join(dir, 'store'), ['12.2.0', '12.4.1']);
  mkdirSync(join(dir, 'local'));
  target = join(dir, 'local', 'cuda');
  ctx = {
    paths,
    alt: {altdir: join(dir, 'alt'), admindir: join(dir, 'adm'), log: join(dir, 'alt.log')},
    ld: {conf: join(dir, 'ld.so.conf'), cache: join(dir, 'ld.so.cache')},
    argv: ['link'],
    // As root, records go to a directory of root's and links only under the named prefixes (docs/security.md).
    env: {CUDAENV_STATE_DIR: join(dir, 'root-state'), CUDAENV_LINK_PREFIXES: dir},
  };
});
afterEach(() => cleanup());

describe('link and unlink a plain symlink target', () => {
  test('an existing link is swapped, relinked, and unlink restores the original', async () => {
    makeFakeToolkit(join(dir, 'local', 'cuda-13.0'), {version: '13.0.0'});
    symlinkSync(join(dir, 'local', 'cuda-13.0'), target);
    const first = await linkVersion(ctx, target, '12.4.1', false);
    expect(readlinkSync(target)).toBe(v('12.4.1'));
    expect(first).toMatchObject({mode: 'symlink', changed: true, before: `a link to ${join(dir, 'local', 'cuda-13.0')}`, restores: `a link to ${join(dir, 'local', 'cuda-13.0')}`});
    await linkVersion(ctx, target, '12.2.0', false);
    expect(readlinkSync(target)).toBe(v('12.2.0'));
    const again = await linkVersion(ctx, target, '12.2.0', false);
    expect(again.changed).toBe(false);
    const u = unlinkTarget(ctx, target);
    expect(readlinkSync(target)).toBe(join(dir, 'local', 'cuda-13.0'));
    expect(u.restored).toBe(`a link to ${join(dir, 'local', 'cuda-13.0')}`);
    expect(() => unlinkTarget(ctx, target)).toThrow(/has not linked/);
  });

  test('a missing target is created, and unlink removes it again', async () => {
    await linkVersion(ctx, target, '12.2.0', false);
    expect(readlinkSync(target)).toBe(v('12.2.0'));
    unlinkTarget(ctx, target);
    expect(existsSync(target)).toBe(false);
  });

  test('a registered toolkit is linked by its own directory, not through the store', async () => {
    const tk = makeFakeToolkit(join(dir, 'opt', 'cuda-11.8'), {version: '11.8.0'});
    symlinkSync(tk, v('11.8.0'));
    await linkVersion(ctx, target, '11.8.0', false);
    expect(readlinkSync(target)).toBe(tk);
  });

  test('--dry-run changes nothing and records nothing', async () => {
    symlinkSync('/nowhere', target);
    const r = await linkVersion(ctx, target, '12.4.1', true);
    expect(r.actions).toEqual([`point ${target} at ${v('12.4.1')}`]);
    expect(readlinkSync(target)).toBe('/nowhere');
    expect(existsSync(join(dir, 'store', 'links'))).toBe(false);
  });

  test('a real directory or file is refused, with how to proceed, and left intact', async () => {
    makeFakeToolkit(target, {version: '12.1.1'});
    const error = await linkVersion(ctx, target, '12.4.1', false).catch((e: unknown) => e) as CudaenvError;
    expect(error).toBeInstanceOf(CudaenvError);
    expect(error.message).toBe(`${target} is a directory, not a link: cudaenv will not replace it (that would lose its contents)`);
    // The aside is named by the directory's own version; the command to link again is the one asked
    // for (12.4.1, not the moved 12.1: that would leave the link where it was) with this --target
    // (plain `cudaenv link` would move /usr/local/cuda).
    expect(error.hint).toBe(`Move it aside and register it, then link again: sudo mv ${target} ${target}-12.1 && cudaenv add ${target}-12.1 && cudaenv link 12.4.1 --target ${target}`);
    expect(readFileSync(join(target, 'version.json'), 'utf8')).toContain('12.1.1');
    const file = join(dir, 'local', 'cuda-file');
    writeFileSync(file, 'data');
    const fileError = await linkVersion(ctx, file, '12.4.1', false).catch((e: unknown) => e) as CudaenvError;
    expect(fileError.message).toMatch(/is a file, not a link/);
    expect(fileError.hint).toBe(`Move or remove ${file} yourself, then run cudaenv link 12.4.1 --target ${file} again.`);
    const spaced = join(dir, 'local', 'my cuda');
    makeFakeToolkit(spaced, {version: '12.1.1'});
    const quoted = await linkVersion(ctx, spaced, '12.4.1', false).catch((e: unknown) => e) as CudaenvError;
    expect(quoted.hint).toBe(`Move it aside and register it, then link again: sudo mv '${spaced}' '${spaced}-12.1' && cudaenv add '${spaced}-12.1' && cudaenv link 12.4.1 --target '${spaced}'`);
    expect(readFileSync(file, 'utf8')).toBe('data');
  });

  testIf(IS_ROOT, NEEDS.root)('as root (sudo) a toolkit in a user\'s store is refused, and root writes nothing there', async () => {
    chownSync(join(dir, 'store'), 65534, 65534);
    await expect(linkVersion(ctx, target, '12.4.1', false)).rejects.toMatchObject({
      code: 'toolkit-not-root-owned',
      message: `refusing to link CUDA 12.4.1 as root: ${v('12.4.1')} is not root's alone (${join(dir, 'store')}: it is owned by uid 65534, not root); every program on this machine would load libraries that another user can change`,
    });
    expect(existsSync(join(dir, 'store', 'links'))).toBe(false);
    expect(existsSync(target)).toBe(false);
  });

  testIf(IS_ROOT, NEEDS.root)('as root the records are root\'s, in the state directory, not in the store', async () => {
    await linkVersion(ctx, target, '12.4.1', false);
    const links = join(dir, 'root-state', 'links');
    expect(existsSync(join(dir, 'store', 'links'))).toBe(false);
    expect(readdirSync(links).filter((f) => f.endsWith('.json'))).toHaveLength(1);
    for (const f of readdirSync(links)) expect(statSync(join(links, f)).uid).toBe(0);
  });

  test('a target whose directory is missing says so', async () => {
    await expect(linkVersion(ctx, join(dir, 'nope', 'cuda'), '12.4.1', false)).rejects.toThrow(`does not exist`);
  });
});

const ldconfigAvailable = spawnSync('sh', ['-c', 'command -v ldconfig || test -x /sbin/ldconfig']).status === 0 && spawnSync('gcc', ['--version']).status === 0;
const describeLd = describeIf(ldconfigAvailable && IS_ROOT, IS_ROOT ? 'needs ldconfig and gcc (apt-get install libc-bin gcc)' : NEEDS.root);

describeLd('the loader cache after the link moves (real ldconfig, private cache)', () => {
  test('ld.so.conf naming the target: ldconfig runs and the cache follows the new version', async () => {
    const {buildLibrary} = await import('./fixtures.js');
    buildLibrary(join(v('12.2.0'), 'lib64'), 'libcudaenvold.so.1');
    buildLibrary(join(v('12.4.1'), 'lib64'), 'libcudaenvnew.so.2');
    mkdirSync(join(dir, 'ld.so.conf.d'));
    writeFileSync(ctx.ld.conf, `include ${join(dir, 'ld.so.conf.d')}/*.conf\n`);
    writeFileSync(join(dir, 'ld.so.conf.d', 'other.conf'), '/usr/lib/unrelated\n');
    writeFileSync(join(dir, 'ld.so.conf.d', 'cuda.conf'), `# CUDA\n${target}/lib64\n`);
    const cacheHas = () => spawnSync('ldconfig', ['-p', '-C', ctx.ld.cache!], {encoding: 'utf8'}).stdout;
    const a = await linkVersion(ctx, target, '12.2.0', false);
    expect(a.ldconfig).toMatchObject({files: [join(dir, 'ld.so.conf.d', 'cuda.conf')], ran: true, ok: true});
    expect(a.ldconfig.message).toContain(`ran ldconfig -C ${ctx.ld.cache} -f ${ctx.ld.conf}`);
    expect(cacheHas()).toContain('libcudaenvold.so.1');
    await linkVersion(ctx, target, '12.4.1', false);
    expect(cacheHas()).toContain('libcudaenvnew.so.2');
    expect(cacheHas()).not.toContain('libcudaenvold.so.1');
    unlinkTarget(ctx, target);
    expect(cacheHas()).not.toContain('libcudaenvnew.so.2');
  });

  test('the check engine then looks at the version through the link, with the new cache and no LD_LIBRARY_PATH', async () => {
    const {buildLibrary} = await import('./fixtures.js');
    const deps = join(dir, 'deps');
    buildLibrary(deps, 'libcudaenvdep.so.1');
    buildLibrary(deps, 'libcudaenvgone.so.1');
    const link = (out: string, needed: string) => {
      writeFileSync(`${out}.c`, 'int user(void) { return 0; }\n');
      const r = spawnSync('gcc', ['-shared', '-fPIC', '-o', out, `${out}.c`, '-Wl,--no-as-needed', join(deps, needed)], {encoding: 'utf8'});
      expect(r.stderr).toBe('');
    };
    link(join(v('12.4.1'), 'lib64', 'libuser.so'), 'libcudaenvdep.so.1');
    link(join(v('12.2.0'), 'lib64', 'libuser.so'), 'libcudaenvgone.so.1');
    spawnSync('rm', [join(deps, 'libcudaenvgone.so.1')]);
    writeFileSync(ctx.ld.conf, `${deps}\n${target}/lib64\n`);
    const good = await linkVersion(ctx, target, '12.4.1', false);
    expect(good.check).toEqual({ok: true, line: expect.stringMatching(/^all \d+ librar(y resolves|ies resolve)$/)});
    const bad = await linkVersion(ctx, target, '12.2.0', false);
    expect(bad.check?.ok).toBe(false);
    expect(bad.check?.line).toContain('libcudaenvgone.so.1');
  });

  test('without a conf line under the target, ldconfig is not run', async () => {
    writeFileSync(ctx.ld.conf, `${join(dir, 'local', 'cuda-13.0')}/lib64\n`);
    const r = await linkVersion(ctx, target, '12.2.0', false);
    expect(r.ldconfig).toMatchObject({files: [], ran: false, message: null});
    expect(existsSync(ctx.ld.cache!)).toBe(false);
  });
});
