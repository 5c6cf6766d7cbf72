import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCliAsync} from '../helpers/cli.js';
import {realisticRelease, startMirrorServer, writeIndex, writeRelease, type MirrorServer} from '../helpers/mirror.js';
import {CAN_MOUNT_TMPFS, NEEDS} from '../helpers/capabilities.js';
import {testIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';

/**
 * Issue 44, items 5, 7 and 11, as a person meets them: what `ls-remote` says of a release and
 * what `install` does with it agree; a spec no release matches lists the releases meant; every
 * error names its path and what to do (a full disk, a store that is a file).
 */

let tmp: {dir: string; cleanup: () => void};
let server: MirrorServer;
let n = 0;

const newStore = (): string => join(tmp.dir, `store${n++}`);
const env = (store: string): NodeJS.ProcessEnv => cliEnv(store, {CUDAENV_MIRROR: server.url, CUDAENV_RETRY_DELAY_MS: '20'});

beforeAll(async () => {
  tmp = makeTempDir('cudaenv-install-asks-');
  const root = join(tmp.dir, 'mirror');
  mkdirSync(root);
  const work = join(tmp.dir, 'work');
  writeRelease(root, realisticRelease(work, '12.4.1'));
  // 13.4.1 has every part of the minimal profile but the CUDA runtime.
  const c13 = realisticRelease(work, '13.4.1');
  writeRelease(root, {label: '13.4.1', components: [
    ...c13.components.filter((c) => c.name !== 'cuda_cudart' && c.name !== 'nvidia_driver'),
    {name: 'cuda_crt', version: '13.4.91', files: {'include/crt/host_defines.h': '/* crt */\n'}},
    {name: 'libnvvm', version: '13.4.91', files: {'nvvm/bin/cicc': 'cicc\n'}},
  ]});
  // The index lists releases whose manifests this test never reads.
  writeIndex(root, ['12.4.0', '12.4.1', '12.6.3', '12.8.0', '12.9.1', '13.4.1']);
  server = await startMirrorServer(root);
}, 120000);

afterAll(async () => {
  await server?.close();
  tmp?.cleanup();
});

describe('ls-remote and install agree on a release that lacks a part (issue 44 item 5)', () => {
  test('13.4.1 without cuda_cudart: marked ! by ls-remote, refused by install (nothing downloaded); --allow-missing-parts changes both', async () => {
    const store = newStore();
    const ls = await runCliAsync(['ls-remote', '13', '--profile', 'minimal'], env(store));
    expect(ls.code).toBe(0);
    expect(ls.stdout).toBe('! 13.4.1  (cannot be installed: it has no linux-x86_64 archive of cuda_cudart, which the minimal profile takes; --allow-missing-parts installs it without)\n');
    const start = server.log.length;
    const refused = await runCliAsync(['install', '13.4.1', '--profile', 'minimal'], env(store));
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('cudaenv: CUDA 13.4.1 has no archive for linux-x86_64 of the CUDA runtime (libcudart, cuda_runtime.h) (looked for as cuda_cudart): nothing was installed\n' +
      'Install it without that part with --allow-missing-parts (code that needs it will not build), or choose another release (`cudaenv ls-remote`), --profile or --arch.\n');
    expect(server.log.slice(start).filter((l) => l.path.endsWith('.tar.xz'))).toEqual([]);
    expect(existsSync(join(store, 'versions', '13.4.1'))).toBe(false);
    // --json: the code says why.
    const json = await runCliAsync(['install', '13.4.1', '--profile', 'minimal', '--json'], env(store));
    expect(JSON.parse(json.stdout)).toMatchObject({ok: false, error: {code: 'missing-parts'}});
    // The default profile (devel) by the same rule, in both.
    expect((await runCliAsync(['ls-remote', '13'], env(store))).stdout).toMatch(/^! 13\.4\.1 {2}\(cannot be installed: it has no linux-x86_64 archive of cuda_cudart, .*which the devel profile takes;/);
    expect((await runCliAsync(['install', '13.4.1'], env(store))).code).toBe(1);

    const allowedLs = await runCliAsync(['ls-remote', '13', '--profile', 'minimal', '--allow-missing-parts', '--json'], env(store));
    expect(JSON.parse(allowedLs.stdout).releases).toEqual([{version: '13.4.1', installed: false, installable: true, platform: 'linux-x86_64', missing_parts: ['cudart']}]);
    expect((await runCliAsync(['ls-remote', '13', '--profile', 'minimal', '--allow-missing-parts'], env(store))).stdout).toBe('  13.4.1  (installed without cudart)\n');
    const allowed = await runCliAsync(['install', '13.4.1', '--profile', 'minimal', '--allow-missing-parts', '--json'], env(store));
    expect(allowed.code).toBe(0);
    const out = JSON.parse(allowed.stdout) as {status: string; missing_parts: Array<{part: string}>; warnings: string[]};
    expect(out.status).toBe('installed');
    expect(out.missing_parts.map((m) => m.part)).toEqual(['cudart']);
    expect(out.warnings).toEqual([expect.stringMatching(/^CUDA 13\.4\.1 has no archive for linux-x86_64 of the CUDA runtime .*: installed without it/)]);
  });
});

describe('a spec no release matches (issue 44 item 11)', () => {
  test.each([
    ['12.4.99', 'Releases of CUDA 12.4: 12.4.0, 12.4.1.'],
    ['12.5', 'The nearest releases: 12.4.0, 12.4.1, 12.6.3, 12.8.0.'],
    ['12.7.1', 'The nearest releases: 12.4.1, 12.6.3, 12.8.0, 12.9.1.'],
    ['14', 'The nearest releases: 12.9.1, 13.4.1.'],
  ])('install %s lists the releases meant', async (spec, near) => {
    const r = await runCliAsync(['install', spec], env(newStore()));
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`cudaenv: the mirror ${server.url} offers no CUDA release matching ${spec}\n${near} See all with \`cudaenv ls-remote\`.\n`);
  });
});

describe('every error names its path and what to do (issue 44 item 7)', () => {
  test('a store that is a file: install, ls, use, global and current say so, not "check the permissions"', async () => {
    const file = join(tmp.dir, `not-a-dir${n++}`);
    writeFileSync(file, 'x');
    const want = `cudaenv: the cudaenv store ${file} is a file, not a directory\n` +
      `CUDAENV_DIR names ${file}: point CUDAENV_DIR at a directory (cudaenv creates it where it is missing) or unset it for ~/.cudaenv, or move the file ${file} away.\n`;
    for (const args of [['install', '12.4.1', '--profile', 'minimal'], ['ls'], ['use', '12.4'], ['global', '12.4'], ['global'], ['current']]) {
      const r = await runCliAsync(args, env(file));
      expect({args, code: r.code, stderr: r.stderr}).toEqual({args, code: 1, stderr: want});
    }
    const json = await runCliAsync(['use', '12.4', '--json'], env(file));
    expect(JSON.parse(json.stdout)).toMatchObject({ok: false, error: {code: 'store-not-directory', message: `the cudaenv store ${file} is a file, not a directory`}});
  });

  /** A failure names a file or directory under the mount, and what to do; a success is fine. */
  function expectExplained(what: string, r: {code: number | null; stderr: string}, mnt: string): void {
    if (r.code === 0) return;
    // An errno message ends with the path it concerns ("..., write '/x/y'"), never with the bare call ("..., write").
    expect({what, stderr: r.stderr}).not.toEqual({what, stderr: expect.stringMatching(/E[A-Z]+: [^\n']*, [a-z]+\n/)});
    expect({what, stderr: r.stderr}).toEqual({what, stderr: expect.stringContaining(mnt)});
    expect({what, stderr: r.stderr}).toEqual({what, stderr: expect.stringMatching(/free (some )?space/i)});
  }

  testIf(CAN_MOUNT_TMPFS, NEEDS.tmpfs)('a full disk: install at every stage, and install, ls, use and global on a disk already full', async () => {
    const mnt = join(tmp.dir, 'small-disk');
    mkdirSync(mnt);
    const mount = (size: string): void => {
      expect(spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mnt], {encoding: 'utf8'})).toMatchObject({status: 0, stderr: ''});
    };
    try {
      // Disks of several sizes: the install runs out of space at a different step in each.
      for (const size of ['16k', '48k', '64k', '96k', '128k']) {
        mount(size);
        try {
          const r = await runCliAsync(['install', '12.4.1', '--profile', 'minimal'], env(join(mnt, 'store')));
          expectExplained(`install on ${size}`, {code: r.code, stderr: r.stderr}, mnt);
          expect(existsSync(join(mnt, 'store', 'tmp')) ? readdirSync(join(mnt, 'store', 'tmp')) : []).toEqual([]);
        } finally {
          spawnSync('umount', [mnt]);
        }
      }
      // Room for the install, then the disk filled up by something else.
      mount('1m');
      const store = join(mnt, 'store');
      expect((await runCliAsync(['install', '12.4.1', '--profile', 'minimal'], env(store))).code).toBe(0);
      const tk = makeFakeToolkit(join(tmp.dir, 'tk-12.6'), {version: '12.6.3'});
      spawnSync('sh', ['-c', 'dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null; true', 'sh', mnt]);
      const runs: Array<[string, string[]]> = [
        ['install --force', ['install', '12.4.1', '--profile', 'minimal', '--force']],
        ['add', ['add', tk]],
        ['global', ['global', '12.4']],
        ['use', ['use', '12.4', '--json']],
        ['ls', ['ls']],
      ];
      let failed = 0;
      for (const [what, args] of runs) {
        const r = await runCliAsync(args, env(store));
        if (r.code !== 0) failed++;
        expectExplained(what, {code: r.code, stderr: r.stderr}, mnt);
      }
      expect(failed).toBeGreaterThanOrEqual(2); // install and global write, on a disk with no room
    } finally {
      spawnSync('umount', [mnt]);
    }
  }, 120000);
});
