import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {makeTempDir} from '../../helpers/tmp.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {planIsolate, probeNamespaces, runIsolated} from '../../../src/core/link/isolate.js';
import {describeIf} from '../../helpers/skip.js';
import {NEEDS} from '../../helpers/capabilities.js';

const probe = probeNamespaces();
const describeNs = describeIf(probe.ok, `${NEEDS.mountNamespace}: ${probe.ok ? '' : probe.reason}`);

let dir: string;
let cleanup: () => void;
let local: string;
let mountpoint: string;
let version: string;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
  local = join(dir, 'local');
  mountpoint = join(local, 'cuda');
  version = makeFakeToolkit(join(dir, 'store', 'versions', '12.4.1'), {version: '12.4.1'});
  makeFakeToolkit(join(local, 'cuda-13.0'), {version: '13.0.0'});
  writeFileSync(join(local, 'notes.txt'), 'kept\n');
  symlinkSync('cuda-13.0', join(local, 'cuda-latest'));
  mkdirSync(join(local, '.hidden'));
});
afterEach(() => cleanup());

/** Runs a shell snippet isolated; $OUT is a file it may write its findings to. */
async function inside(script: string): Promise<{status: number; out: string}> {
  const out = join(dir, 'out.txt');
  const status = await runIsolated({versionDir: version, mountpoint, command: 'sh', args: ['-c', script, 'sh', mountpoint, out, local], env: {...process.env}}, '12.4');
  return {status, out: existsSync(out) ? readFileSync(out, 'utf8') : ''};
}

/** The toolkit version a version.json names (makeFakeToolkit writes it indented). */
const VER = 'ver() { sed -n "s/.*\\"version\\": *\\"\\([0-9.]*\\)\\".*/\\1/p" "$1" | head -n 1; }; ';
const survey = VER + '{ ver "$1/version.json"; ver "$3/cuda-13.0/version.json"; cat "$3/notes.txt"; readlink "$3/cuda-latest"; ls -a "$3" | tr "\\n" " "; } > "$2"';

describeNs('exec --isolate: a private /usr/local/cuda (real unshare)', () => {
  test('where the mount point is a symlink, it shows the version and nothing else changes, inside or out', async () => {
    symlinkSync('cuda-13.0', mountpoint);
    expect(planIsolate({versionDir: version, mountpoint, command: 'true', args: [], env: {}}).mode).toBe('overlay');
    const r = await inside(survey);
    expect(r.status).toBe(0);
    const lines = r.out.split('\n');
    expect(lines[0]).toBe('12.4.1');
    expect(lines[1]).toBe('13.0.0'); // the link's old target is not hidden
    expect(lines.slice(2, 4)).toEqual(['kept', 'cuda-13.0']);
    expect(lines[4].split(' ').sort()).toEqual(['', '.', '..', '.hidden', 'cuda', 'cuda-13.0', 'cuda-latest', 'notes.txt'].sort());
    expect(readlinkSync(mountpoint)).toBe('cuda-13.0'); // outside: untouched
  });

  test('where nothing exists at the mount point, one appears only inside', async () => {
    const r = await inside(survey);
    expect(r.out.split('\n')[0]).toBe('12.4.1');
    expect(existsSync(mountpoint)).toBe(false);
  });

  test('a real directory is bound over directly, its contents untouched', async () => {
    makeFakeToolkit(mountpoint, {version: '11.8.0'});
    const r = await inside(VER + 'ver "$1/version.json" > "$2"');
    expect(r.out).toBe('12.4.1\n');
    expect(JSON.parse(readFileSync(join(mountpoint, 'version.json'), 'utf8')).cuda.version).toBe('11.8.0');
    expect(lstatSync(mountpoint).isDirectory()).toBe(true);
  });

  test('a missing parent directory is a clear error before anything runs', () => {
    expect(() => planIsolate({versionDir: version, mountpoint: join(dir, 'nope', 'cuda'), command: 'true', args: [], env: {}}))
      .toThrow(`--isolate: ${join(dir, 'nope')} does not exist, so there is nowhere to mount ${join(dir, 'nope', 'cuda')}`);
  });

  test('the exit status and a fatal signal of the command come back', async () => {
    expect((await inside('exit 7')).status).toBe(7);
    expect((await inside('kill -TERM $$')).status).toBe(128 + 15);
  });

  test('the setup (root in the namespace) never runs tools from the toolkit\'s bin/; CMD still has it first on PATH', async () => {
    const marks = join(dir, 'marks');
    mkdirSync(marks);
    for (const tool of ['mount', 'umount', 'stat', 'ln', 'mkdir', 'readlink', 'unshare', 'sh']) {
      writeFileSync(join(version, 'bin', tool), `#!/bin/sh\ntouch '${marks}/${tool}'\nexit 1\n`);
      chmodSync(join(version, 'bin', tool), 0o755);
    }
    const out = join(dir, 'out.txt');
    const env = {...process.env, PATH: `${join(version, 'bin')}:${process.env.PATH}`};
    const status = await runIsolated({versionDir: version, mountpoint, command: '/bin/sh', args: ['-c', 'printf "%s\\n" "$PATH" > "$1"; cat "$2/version.json" >> "$1"', 'sh', out, mountpoint], env}, '12.4');
    expect(readdirSync(marks)).toEqual([]);
    expect(status).toBe(0);
    const [path] = readFileSync(out, 'utf8').split('\n');
    expect(path).toBe(env.PATH);
    expect(readFileSync(out, 'utf8')).toContain('12.4.1');
  });

  test('arguments reach the command as they are, never through the shell', async () => {
    const odd = join(dir, 'a file; $(touch pwned) `id`');
    const out = join(dir, 'out.txt');
    const status = await runIsolated({versionDir: version, mountpoint, command: 'sh', args: ['-c', 'printf "%s" "$1" > "$2"', 'sh', odd, out], env: {...process.env}}, '12.4');
    expect(status).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(odd);
    expect(existsSync(join(process.cwd(), 'pwned'))).toBe(false);
  });
});
