import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {have} from '../helpers/capabilities.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {RELEASE_PUBLIC_KEY} from '../../src/core/self/release-key.js';
import {CAN_HIDE_NODE, DIST_EXE, EXE, HAVE_EXE, HOST_ARCH, NEEDS_EXE, NEEDS_HIDE_NODE, WITHOUT_NODE} from './exe.js';
import {ARCHIVE, makeRelease, makeTestKey, patchExecutable, sha256, sign, variantOf, type TestKey} from './release.js';
import {makeCertificate, serveDir, type Served} from './serve.js';

/**
 * `cudaenv self-update` (issues 34, 46): from the base install.sh remembered, checked, atomic; refused
 * where npm or pip manage cudaenv. The installed executable is the built one with a test key patched
 * in for the release key (patchExecutable); the releases on a TLS server on 127.0.0.1 are signed
 * with that key. NODE_EXTRA_CA_CERTS makes the executable trust the server's certificate.
 */

const READY = HAVE_EXE && existsSync(join(DIST_EXE, ARCHIVE)) && have('python3') && have('openssl') && CAN_HIDE_NODE;
const WHY = !HAVE_EXE ? NEEDS_EXE : CAN_HIDE_NODE ? `needs ${ARCHIVE} in dist-exe (npm run build:exe), python3 and openssl` : NEEDS_HIDE_NODE;
const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {version: string}).version;

let tmp: {dir: string; cleanup: () => void};
let key: TestKey;
let tls: Served;
let cert: {cert: string; key: string};
/** The built executable trusting the test key: what the releases ship and what is installed. */
let patched: string;
let marker: string;
const url = (release: string) => `${tls.url}/${release}`;

beforeAll(async () => {
  if (!READY) return;
  tmp = makeTempDir('cudaenv-self-update-');
  key = makeTestKey(tmp.dir);
  patched = join(tmp.dir, 'cudaenv-patched');
  patchExecutable(EXE, patched, RELEASE_PUBLIC_KEY, key);
  const root = join(tmp.dir, 'served');
  mkdirSync(root);
  // The archive of the patched executable (xz -0, as CI's build-exe makes them).
  const stage = join(tmp.dir, 'stage');
  mkdirSync(stage);
  copyFileSync(patched, join(stage, 'cudaenv'));
  const tarball = join(tmp.dir, ARCHIVE);
  expect(spawnSync('sh', ['-c', `tar -C "${stage}" -cf - cudaenv | xz -0 -T0 > "${tarball}"`]).status).toBe(0);
  makeRelease(join(root, 'good'), {version: VERSION, exe: patched, archive: tarball, link: true, key});
  makeRelease(join(root, 'older'), {version: '0.0.1', exe: patched, archive: tarball, link: true, key});
  marker = join(tmp.dir, 'marker');
  const evil = join(tmp.dir, 'evil');
  writeFileSync(evil, `#!/bin/sh\necho ran >> "${marker}"\n`, {mode: 0o755});
  makeRelease(join(root, 'unsigned'), {version: '9.9.9', exe: evil, key});
  rmSync(join(root, 'unsigned', 'SHA256SUMS.sig'));
  const bad = makeRelease(join(root, 'bad'), {version: VERSION, exe: patched, archive: tarball, link: true, key});
  writeFileSync(join(bad, 'SHA256SUMS'), readFileSync(join(bad, 'SHA256SUMS'), 'utf8').replace(new RegExp(`^[0-9a-f]{64}(?=  ${ARCHIVE.replaceAll('.', '\\.')}$)`, 'm'), 'f'.repeat(64)));
  sign(bad, key);
  cert = makeCertificate(tmp.dir);
  tls = await serveDir(root, {tls: cert});
});
afterAll(() => {
  tls?.close();
  tmp?.cleanup();
});

const sha = sha256;

/** An install as install.sh leaves it, of an executable that differs from the release's (one byte appended: ELF ignores it). */
function installed(name: string, base: string | undefined): {dir: string; exe: string} {
  const dir = join(tmp.dir, name, '.cudaenv', 'bin');
  mkdirSync(dir, {recursive: true});
  const exe = join(dir, 'cudaenv');
  variantOf(patched, exe);
  if (base) writeFileSync(join(dir, '.cudaenv-receipt.json'), JSON.stringify({installer: 'install.sh', base, arch: HOST_ARCH}));
  return {dir, exe};
}

function run(exe: string, env: NodeJS.ProcessEnv = {}, args: string[] = []) {
  return spawnSync(WITHOUT_NODE, [exe, 'self-update', ...args], {env: {PATH: '/usr/bin:/bin', HOME: tmp.dir, CUDAENV_DIR: join(tmp.dir, 'store'), NODE_EXTRA_CA_CERTS: cert.cert, ...env}, encoding: 'utf8', timeout: 120_000});
}

describeIf(READY, WHY)('cudaenv self-update', () => {
  test('replaces the executable with the release\'s, by a rename (a new inode), with node hidden; a second run has nothing to do', () => {
    const {dir, exe} = installed('update', url('good'));
    const inode = statSync(exe).ino;
    const r = run(exe);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${exe}: cudaenv/${VERSION} -> cudaenv/${VERSION}\n`);
    expect(statSync(exe).ino).not.toBe(inode);
    expect(sha(exe)).toBe(sha(patched));
    expect(statSync(exe).mode & 0o777).toBe(0o755);
    expect(readdirSync(dir).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
    const again = run(exe);
    expect(again.status).toBe(0);
    expect(again.stdout).toBe(`${exe} is already cudaenv/${VERSION}, the release at ${url('good')}\n`);
  });

  test('the built executable trusts only its built-in key: the release signed by the test key is refused by the unpatched one', () => {
    const dir = join(tmp.dir, 'unpatched', '.cudaenv', 'bin');
    mkdirSync(dir, {recursive: true});
    const exe = join(dir, 'cudaenv');
    variantOf(EXE, exe);
    writeFileSync(join(dir, '.cudaenv-receipt.json'), JSON.stringify({installer: 'install.sh', base: url('good'), arch: HOST_ARCH}));
    const before = sha(exe);
    const r = run(exe);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${url('good')}/SHA256SUMS.sig is not a signature of ${url('good')}/SHA256SUMS by cudaenv's release key: nothing was replaced`);
    expect(sha(exe)).toBe(before);
  });

  test('an older release: refused without --allow-downgrade, installed with it', () => {
    const {exe} = installed('older', url('older'));
    const before = sha(exe);
    const r = run(exe);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`the release at ${url('older')} is cudaenv 0.0.1, older than this cudaenv ${VERSION}: nothing was replaced`);
    expect(r.stderr).toContain('cudaenv self-update --allow-downgrade');
    expect(sha(exe)).toBe(before);
    const allowed = run(exe, {}, ['--allow-downgrade']);
    expect([allowed.status, allowed.stderr]).toEqual([0, '']);
    expect(allowed.stdout).toBe(`${exe}: cudaenv/${VERSION} -> cudaenv/0.0.1\n`);
  });

  test('an unsigned release: refused, and its executable never runs', () => {
    const {exe} = installed('unsigned', url('unsigned'));
    const before = sha(exe);
    const r = run(exe);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${url('unsigned')}/SHA256SUMS.sig does not exist: the release at that base is not signed, so nothing was replaced`);
    expect(sha(exe)).toBe(before);
    expect(existsSync(marker)).toBe(false);
  });

  test('the shell start files an older build wrote are written again by the new executable, so the next shell sources its code (node hidden)', () => {
    const {exe} = installed('shells', url('good'));
    const store = join(tmp.dir, 'shells', 'store');
    const old = join(store, 'exe', '0.0.9-000000000000', 'shims', 'shell');
    mkdirSync(join(store, 'shell'), {recursive: true});
    // As the older build left them: naming its own copy of the shell code, which an update leaves behind.
    for (const shell of ['bash', 'fish']) writeFileSync(join(store, 'shell', `init.${shell}`), `# cudaenv ${shell} integration (an older build)\n. ${old}/posix.sh\n`);
    const r = run(exe, {CUDAENV_DIR: store});
    expect([r.status, r.stderr]).toEqual([0, '']);
    const builds = readdirSync(join(store, 'exe')).filter((b) => b !== '0.0.9-000000000000');
    expect(builds).toHaveLength(1);
    const code = join(store, 'exe', builds[0]!, 'shims', 'shell');
    const bash = readFileSync(join(store, 'shell', 'init.bash'), 'utf8');
    expect(bash).toContain(`. ${code}/posix.sh && . ${code}/bash.sh`);
    expect(bash).toContain(`_CUDAENV_BIN=${exe}`);
    expect(readFileSync(join(store, 'shell', 'init.fish'), 'utf8')).toContain(`${code}/cudaenv.fish`);
    for (const file of ['posix.sh', 'bash.sh', 'cudaenv.fish']) expect(existsSync(join(code, file))).toBe(true);
    // Only the start files that were there: an update does not set up shells the user never set up.
    expect(existsSync(join(store, 'shell', 'init.zsh'))).toBe(false);
    const shell = spawnSync(WITHOUT_NODE, ['bash', '--norc', '--noprofile', '-c', `. ${join(store, 'shell', 'init.bash')} && type -t cudaenv && cudaenv --version`], {env: {PATH: '/usr/bin:/bin', HOME: tmp.dir, CUDAENV_DIR: store}, encoding: 'utf8'});
    expect(shell.stderr).toBe('');
    expect(shell.stdout).toMatch(/^function\ncudaenv\/\S+ linux-/);
  });

  test('an archive that does not match the signed SHA256SUMS (CUDAENV_INSTALL_BASE overriding the receipt): nothing replaced, both sums named', () => {
    const {dir, exe} = installed('bad', url('good'));
    const before = sha(exe);
    const r = run(exe, {CUDAENV_INSTALL_BASE: url('bad')});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${url('bad')}/${ARCHIVE} has SHA-256 ${sha(join(tmp.dir, ARCHIVE))}, but SHA256SUMS says ${'f'.repeat(64)}: nothing was replaced`);
    expect(sha(exe)).toBe(before);
    expect(readdirSync(dir).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
  });

  test('without a receipt or CUDAENV_INSTALL_BASE: refused, saying where it looked and what to do', () => {
    const {dir, exe} = installed('noreceipt', undefined);
    const r = run(exe);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`it left no ${join(dir, '.cudaenv-receipt.json')}`);
    expect(r.stderr).toContain('Set CUDAENV_INSTALL_BASE');
  });
});

test('the npm package refuses, naming the clone\'s update', () => {
  const r = spawnSync(join(REPO_ROOT, 'bin', 'cudaenv'), ['self-update'], {env: {PATH: process.env.PATH, HOME: REPO_ROOT, CUDAENV_DIR: '/nonexistent-cudaenv-store'}, encoding: 'utf8'});
  expect(r.status).toBe(2);
  expect(r.stderr).toContain(`this cudaenv runs from the npm package at ${REPO_ROOT}: self-update replaces only the single executable`);
  expect(r.stderr).toMatch(existsSync(join(REPO_ROOT, '.git')) ? /git -C \S+ pull && npm --prefix \S+ ci/ : /npm install -g/);
});
