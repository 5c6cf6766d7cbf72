import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {have} from '../helpers/capabilities.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {DIST_EXE, HAVE_EXE, HOST_ARCH, NEEDS_EXE} from './exe.js';
import {serveDir} from './serve.js';

/**
 * install.sh (issue 34) against a loopback server holding the files of dist-exe/, and a mirror
 * whose SHA256SUMS does not match: what `curl -fsSL BASE/install.sh | sh` does on a user's machine.
 */

const INSTALL_SH = join(REPO_ROOT, 'install.sh');
const ARCHIVE = `cudaenv-linux-${HOST_ARCH}.tar.xz`;
const READY = HAVE_EXE && existsSync(join(DIST_EXE, ARCHIVE)) && have('python3') && have('wget') && have('curl');
const WHY = HAVE_EXE ? `needs ${ARCHIVE} in dist-exe (npm run build:exe), python3, curl and wget` : NEEDS_EXE;

let tmp: {dir: string; cleanup: () => void};
let good: {url: string; close: () => void};
let bad: {url: string; close: () => void};

beforeAll(async () => {
  if (!READY) return;
  tmp = makeTempDir('cudaenv-install-sh-');
  const goodDir = join(tmp.dir, 'good');
  const badDir = join(tmp.dir, 'bad');
  for (const d of [goodDir, badDir]) {
    mkdirSync(d);
    symlinkSync(join(DIST_EXE, ARCHIVE), join(d, ARCHIVE));
    copyFileSync(INSTALL_SH, join(d, 'install.sh'));
  }
  copyFileSync(join(DIST_EXE, 'SHA256SUMS'), join(goodDir, 'SHA256SUMS'));
  writeFileSync(join(badDir, 'SHA256SUMS'), `${'0'.repeat(64)}  ${ARCHIVE}\n`);
  good = await serveDir(goodDir);
  bad = await serveDir(badDir);
});
afterAll(() => {
  good?.close();
  bad?.close();
  tmp?.cleanup();
});

/** A fresh HOME of its own (not under the served directories). */
function home(name: string): string {
  const h = join(tmp.dir, 'homes', name);
  mkdirSync(h, {recursive: true});
  return h;
}

function install(h: string, base: string, path = '/usr/local/bin:/usr/bin:/bin', extra: NodeJS.ProcessEnv = {}) {
  return spawnSync('sh', ['-c', 'curl -fsSL "$CUDAENV_INSTALL_BASE/install.sh" | sh'], {
    env: {PATH: path, HOME: h, CUDAENV_INSTALL_BASE: base, LANG: 'C.UTF-8', ...extra},
    encoding: 'utf8',
    timeout: 120_000,
  });
}

describeIf(READY, WHY)('install.sh', () => {
  test('curl | sh: checks the archive, installs ~/.cudaenv/bin/cudaenv and its receipt, prints the rc lines and writes no rc file', () => {
    const h = home('good');
    const r = install(h, good.url);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const exe = join(h, '.cudaenv', 'bin', 'cudaenv');
    expect(r.stdout).toContain(`installed cudaenv/`);
    expect(r.stdout).toContain(`export PATH="${join(h, '.cudaenv', 'bin')}:$PATH"`);
    expect(r.stdout).toContain('this installer changes no rc file');
    expect(readdirSync(h).sort()).toEqual(['.cudaenv']);
    expect(readdirSync(join(h, '.cudaenv', 'bin')).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
    expect(JSON.parse(readFileSync(join(h, '.cudaenv', 'bin', '.cudaenv-receipt.json'), 'utf8'))).toEqual({installer: 'install.sh', base: good.url, arch: HOST_ARCH});
    const v = spawnSync(exe, ['--version'], {env: {PATH: '/usr/bin:/bin', HOME: h}, encoding: 'utf8'});
    expect(v.stdout).toMatch(/^cudaenv\/\S+ linux-/);
  });

  test('run again over an install: replaces it atomically and says what it replaced', () => {
    const h = home('again');
    expect(install(h, good.url).status).toBe(0);
    const r = install(h, good.url);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/replaced cudaenv\/\S+ linux-\S+ node-v\S+ with cudaenv\//);
    expect(readdirSync(join(h, '.cudaenv', 'bin')).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
  });

  test('a SHA256SUMS that does not match: nothing is installed, and the message names both sums', () => {
    const h = home('bad');
    const r = install(h, bad.url);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${bad.url}/${ARCHIVE} has SHA-256 `);
    expect(r.stderr).toContain(`but SHA256SUMS says ${'0'.repeat(64)}: not installed`);
    expect(existsSync(join(h, '.cudaenv', 'bin', 'cudaenv'))).toBe(false);
  });

  test('no curl: wget downloads (a PATH with every tool the script uses but curl)', () => {
    const h = home('wget');
    const tools = join(tmp.dir, 'tools-wget');
    mkdirSync(tools);
    for (const t of ['sh', 'uname', 'mkdir', 'mktemp', 'rm', 'cp', 'mv', 'chmod', 'awk', 'cut', 'sha256sum', 'xz', 'tar', 'wget', 'cat', 'env']) {
      const where = spawnSync('sh', ['-c', `command -v ${t}`], {encoding: 'utf8'}).stdout.trim();
      symlinkSync(where, join(tools, t));
    }
    const r = spawnSync(join(tools, 'sh'), [INSTALL_SH], {env: {PATH: tools, HOME: h, CUDAENV_INSTALL_BASE: good.url}, encoding: 'utf8', timeout: 120_000});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(existsSync(join(h, '.cudaenv', 'bin', 'cudaenv'))).toBe(true);
  });

  test('an architecture with no executable: refused before any download, with what to do instead', () => {
    const h = home('riscv');
    const fake = join(tmp.dir, 'fake-uname');
    mkdirSync(fake);
    writeFileSync(join(fake, 'uname'), '#!/bin/sh\ncase $1 in -s) echo Linux ;; -m) echo riscv64 ;; esac\n', {mode: 0o755});
    const r = spawnSync('sh', [INSTALL_SH], {env: {PATH: `${fake}:/usr/bin:/bin`, HOME: h, CUDAENV_INSTALL_BASE: 'http://127.0.0.1:9/unused'}, encoding: 'utf8'});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('no cudaenv executable for the riscv64 architecture (there are x86_64 and aarch64 ones)');
    expect(r.stderr).toContain('install the npm package');
    expect(existsSync(join(h, '.cudaenv'))).toBe(false);
  });

  test('the repository\'s install.sh without CUDAENV_INSTALL_BASE says it does not know where releases are', () => {
    const r = spawnSync('sh', [INSTALL_SH], {env: {PATH: '/usr/bin:/bin', HOME: home('nobase')}, encoding: 'utf8'});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('Set CUDAENV_INSTALL_BASE to the URL');
  });
});
