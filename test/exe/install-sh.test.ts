import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {have} from '../helpers/capabilities.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {DIST_EXE, EXE, HAVE_EXE, HOST_ARCH, NEEDS_EXE} from './exe.js';
import {ARCHIVE, makeRelease, makeTestKey, patchInstallSh, sha256, sign, type TestKey} from './release.js';
import {makeCertificate, serveDir, setRedirects, type Served} from './serve.js';

/**
 * install.sh (issues 34, 46) against a TLS server on 127.0.0.1 holding releases signed by a test
 * key (the test's copy of install.sh trusts it: patchInstallSh), as `curl -fsSL BASE/install.sh | sh`
 * runs on a user's machine: the signature first, then VERSION, the archive and the unpacked
 * executable against the signed list, no downgrade unless asked, one regular file cudaenv, no
 * https -> http redirect. The refused releases ship a script that leaves a marker when run: after
 * a refusal there is none.
 */

const INSTALL_SH = join(REPO_ROOT, 'install.sh');
const READY = HAVE_EXE && existsSync(join(DIST_EXE, ARCHIVE)) && have('python3') && have('wget') && have('curl') && have('openssl');
const WHY = HAVE_EXE ? `needs ${ARCHIVE} in dist-exe (npm run build:exe), python3, curl, wget and openssl` : NEEDS_EXE;
const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {version: string}).version;

let tmp: {dir: string; cleanup: () => void};
let key: TestKey;
let tls: Served;
let plain: Served;
let cert: {cert: string; key: string};
let marker: string;
let victim: string;
const url = (release: string) => `${tls.url}/${release}`;

beforeAll(async () => {
  if (!READY) return;
  tmp = makeTempDir('cudaenv-install-sh-');
  key = makeTestKey(tmp.dir);
  const other = makeTestKey(tmp.dir, 'other');
  const root = join(tmp.dir, 'served');
  marker = join(tmp.dir, 'marker');
  const evil = join(tmp.dir, 'evil-cudaenv');
  writeFileSync(evil, `#!/bin/sh\necho "ran $0 $*" >> "${marker}"\necho "cudaenv/9.9.9 linux-x64 node-v26.0.0"\n`, {mode: 0o755});
  victim = join(tmp.dir, 'victim.sh');
  writeFileSync(victim, `#!/bin/sh\necho "victim ran" >> "${marker}"\n`, {mode: 0o644});
  const real = {exe: EXE, archive: join(DIST_EXE, ARCHIVE), link: true, key};
  const releases: Record<string, string> = {
    good: makeRelease(join(root, 'good'), {version: VERSION, ...real}),
    older: makeRelease(join(root, 'older'), {version: '0.0.1', ...real}),
    badsum: makeRelease(join(root, 'badsum'), {version: VERSION, ...real}),
    nosig: makeRelease(join(root, 'nosig'), {version: '9.9.9', exe: evil, key}),
    othersig: makeRelease(join(root, 'othersig'), {version: '9.9.9', exe: evil, key}),
    tampered: makeRelease(join(root, 'tampered'), {version: '9.9.9', exe: evil, key}),
    symlink: makeRelease(join(root, 'symlink'), {version: '9.9.9', exe: evil, key, contents: {kind: 'symlink', target: victim}}),
    traversal: makeRelease(join(root, 'traversal'), {version: '9.9.9', exe: evil, key, contents: {kind: 'traversal'}}),
  };
  // Signed, but listing another SHA-256 for the archive than the archive's.
  const badsums = join(releases.badsum!, 'SHA256SUMS');
  writeFileSync(badsums, readFileSync(badsums, 'utf8').replace(new RegExp(`^[0-9a-f]{64}(?=  ${ARCHIVE.replaceAll('.', '\\.')}$)`, 'm'), '0'.repeat(64)));
  sign(releases.badsum!, key);
  spawnSync('rm', [join(releases.nosig!, 'SHA256SUMS.sig')]);
  sign(releases.othersig!, other);
  const sums = join(releases.tampered!, 'SHA256SUMS');
  writeFileSync(sums, `${readFileSync(sums, 'utf8')}${'1'.repeat(64)}  extra\n`);
  mkdirSync(join(root, 'to-http'));
  for (const dir of [...Object.values(releases), join(root, 'to-http')]) patchInstallSh(INSTALL_SH, join(dir, 'install.sh'), key);
  cert = makeCertificate(tmp.dir);
  const redirects = join(tmp.dir, 'redirects.json');
  tls = await serveDir(root, {tls: cert, redirects});
  plain = await serveDir(root);
  setRedirects(redirects, {'/to-http/SHA256SUMS': `${plain.url}/good/SHA256SUMS`});
  writeFileSync(join(tmp.dir, 'wgetrc'), `ca_certificate = ${cert.cert}\n`);
});
afterAll(() => {
  tls?.close();
  plain?.close();
  tmp?.cleanup();
});

/** A fresh HOME of its own (not under the served directories); no marker of an earlier test. */
function home(name: string): string {
  spawnSync('rm', ['-f', marker]);
  const h = join(tmp.dir, 'homes', name);
  mkdirSync(h, {recursive: true});
  return h;
}

/** The test's certificate authority, trusted by curl and wget as a user's own CA bundle would be. */
const trust = () => ({CURL_CA_BUNDLE: cert.cert, WGETRC: join(tmp.dir, 'wgetrc')});

function install(h: string, base: string, path = '/usr/local/bin:/usr/bin:/bin', extra: NodeJS.ProcessEnv = {}) {
  return spawnSync('sh', ['-c', 'curl -fsSL "$CUDAENV_INSTALL_BASE/install.sh" | sh'], {
    env: {PATH: path, HOME: h, CUDAENV_INSTALL_BASE: base, LANG: 'C.UTF-8', ...trust(), ...extra},
    encoding: 'utf8',
    timeout: 120_000,
  });
}

/** Refused with MESSAGE (exit 1): nothing installed, nothing downloaded ran, the victim untouched. */
function refused(release: string, message: string | RegExp, extra: NodeJS.ProcessEnv = {}): void {
  const h = home(`refused-${release}`);
  const r = install(h, url(release), undefined, extra);
  expect(r.stderr).toMatch(message);
  expect(r.status).toBe(1);
  expect(existsSync(join(h, '.cudaenv', 'bin', 'cudaenv'))).toBe(false);
  expect(existsSync(marker)).toBe(false);
  expect(statSync(victim).mode & 0o777).toBe(0o644);
}

/** A directory of links to the tools install.sh uses, but WITHOUT. */
function toolsWithout(without: string): string {
  const tools = join(tmp.dir, `tools-without-${without}`);
  mkdirSync(tools);
  for (const t of ['sh', 'uname', 'mkdir', 'mktemp', 'rm', 'cp', 'mv', 'chmod', 'awk', 'cut', 'sha256sum', 'xz', 'tar', 'curl', 'wget', 'openssl', 'cat', 'env', 'head', 'grep', 'sed', 'tr', 'wc', 'tail']) {
    if (t === without) continue;
    const where = spawnSync('sh', ['-c', `command -v ${t}`], {encoding: 'utf8'}).stdout.trim();
    symlinkSync(where, join(tools, t));
  }
  return tools;
}

describeIf(READY, WHY)('install.sh', () => {
  test('curl | sh over https: checks the signed release, installs ~/.cudaenv/bin/cudaenv and its receipt, prints the rc lines and writes no rc file', () => {
    const h = home('good');
    const r = install(h, url('good'));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const exe = join(h, '.cudaenv', 'bin', 'cudaenv');
    expect(r.stdout).toContain(`downloading ${url('good')}/${ARCHIVE} (cudaenv ${VERSION})`);
    expect(r.stdout).toContain(`installed cudaenv/`);
    expect(r.stdout).toContain(`export PATH="${join(h, '.cudaenv', 'bin')}:$PATH"`);
    expect(r.stdout).toContain('this installer changes no rc file');
    expect(readdirSync(h).sort()).toEqual(['.cudaenv']);
    expect(readdirSync(join(h, '.cudaenv', 'bin')).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
    expect(JSON.parse(readFileSync(join(h, '.cudaenv', 'bin', '.cudaenv-receipt.json'), 'utf8'))).toEqual({installer: 'install.sh', base: url('good'), arch: HOST_ARCH});
    expect(sha256(exe)).toBe(sha256(EXE));
    expect(statSync(exe).mode & 0o777).toBe(0o755);
    const v = spawnSync(exe, ['--version'], {env: {PATH: '/usr/bin:/bin', HOME: h}, encoding: 'utf8'});
    expect(v.stdout).toMatch(/^cudaenv\/\S+ linux-/);
  });

  test('run again over an install: replaces it atomically and says what it replaced; an older release is refused unless CUDAENV_INSTALL_ALLOW_DOWNGRADE=1', () => {
    const h = home('again');
    expect(install(h, url('good')).status).toBe(0);
    const r = install(h, url('good'));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/replaced cudaenv\/\S+ linux-\S+ node-v\S+ with cudaenv\//);
    expect(readdirSync(join(h, '.cudaenv', 'bin')).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
    const older = install(h, url('older'));
    expect(older.status).toBe(1);
    expect(older.stderr).toContain(`the release at ${url('older')} is cudaenv 0.0.1, older than the installed cudaenv ${VERSION} (${join(h, '.cudaenv', 'bin', 'cudaenv')}): not installed`);
    expect(older.stderr).toContain('set CUDAENV_INSTALL_ALLOW_DOWNGRADE=1');
    expect(JSON.parse(readFileSync(join(h, '.cudaenv', 'bin', '.cudaenv-receipt.json'), 'utf8')).base).toBe(url('good'));
    const allowed = install(h, url('older'), undefined, {CUDAENV_INSTALL_ALLOW_DOWNGRADE: '1'});
    expect([allowed.status, allowed.stderr]).toEqual([0, '']);
    expect(JSON.parse(readFileSync(join(h, '.cudaenv', 'bin', '.cudaenv-receipt.json'), 'utf8')).base).toBe(url('older'));
  });

  test('a signed SHA256SUMS that does not match the archive: nothing is installed, and the message names both sums', () => {
    refused('badsum', new RegExp(`${url('badsum')}/${ARCHIVE.replaceAll('.', '\\.')} has SHA-256 ${sha256(join(DIST_EXE, ARCHIVE))}, but SHA256SUMS says ${'0'.repeat(64)}: not installed`));
  });

  test('no SHA256SUMS.sig, one by another key, or a SHA256SUMS changed after signing: refused before the archive is downloaded', () => {
    refused('nosig', `could not download ${url('nosig')}/SHA256SUMS.sig (curl exit 22)`);
    const why = (r: string) => `${url(r)}/SHA256SUMS.sig is not a signature of ${url(r)}/SHA256SUMS by cudaenv's release key: not installed`;
    refused('othersig', why('othersig'));
    refused('tampered', why('tampered'));
  });

  test('an archive whose cudaenv is a symbolic link to a local script: refused; the script is neither made executable nor run', () => {
    refused('symlink', new RegExp(`${ARCHIVE.replaceAll('.', '\\.')} holds cudaenv as something other than a regular file \\(l\\S+ .* cudaenv -> ${victim}\\): not installed`));
  });

  test('an archive whose member is ../cudaenv: refused', () => {
    refused('traversal', `${ARCHIVE} holds 1 members (../cudaenv ), not only cudaenv: not installed`);
  });

  test('a redirect from https to http: refused by curl (--proto-redir) and by wget (install.sh follows its redirects itself)', () => {
    refused('to-http', `could not download ${url('to-http')}/SHA256SUMS (curl exit 1)`);
    const h = home('to-http-wget');
    const r = spawnSync(join(toolsWithout('curl'), 'sh'), [join(tmp.dir, 'served', 'good', 'install.sh')], {env: {PATH: join(tmp.dir, 'tools-without-curl'), HOME: h, CUDAENV_INSTALL_BASE: url('to-http'), ...trust()}, encoding: 'utf8', timeout: 120_000});
    expect(r.stderr).toContain(`${url('to-http')}/SHA256SUMS redirects to ${plain.url}/good/SHA256SUMS, from https to plain http: refused`);
    expect(r.status).toBe(1);
    expect(existsSync(join(h, '.cudaenv'))).toBe(false);
  });

  test('no curl: wget downloads (a PATH with every tool the script uses but curl)', () => {
    const h = home('wget');
    const tools = existsSync(join(tmp.dir, 'tools-without-curl')) ? join(tmp.dir, 'tools-without-curl') : toolsWithout('curl');
    const r = spawnSync(join(tools, 'sh'), [join(tmp.dir, 'served', 'good', 'install.sh')], {env: {PATH: tools, HOME: h, CUDAENV_INSTALL_BASE: url('good'), ...trust()}, encoding: 'utf8', timeout: 120_000});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(sha256(join(h, '.cudaenv', 'bin', 'cudaenv'))).toBe(sha256(EXE));
  });

  test('no openssl: refused before any download, saying the signature is never skipped', () => {
    const h = home('no-openssl');
    const tools = toolsWithout('openssl');
    const r = spawnSync(join(tools, 'sh'), [join(tmp.dir, 'served', 'good', 'install.sh')], {env: {PATH: tools, HOME: h, CUDAENV_INSTALL_BASE: url('good'), ...trust()}, encoding: 'utf8'});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('openssl is not installed: it checks the release\'s signature, which this installer never skips');
    expect(existsSync(join(h, '.cudaenv'))).toBe(false);
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

  test('a release\'s install.sh whose built-in base is not https is refused (only a base the user names may be http)', () => {
    const script = join(tmp.dir, 'http-default.sh');
    writeFileSync(script, readFileSync(INSTALL_SH, 'utf8').replace(/^DEFAULT_BASE=''$/m, `DEFAULT_BASE='${plain.url}/good'`));
    const r = spawnSync('sh', [script], {env: {PATH: '/usr/bin:/bin', HOME: home('http-default')}, encoding: 'utf8'});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`this install.sh's base ${plain.url}/good is not https://`);
  });
});
