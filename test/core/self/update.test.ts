import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError} from '../../../src/core/errors.js';
import {deferExtraCaCerts} from '../../../src/core/remote/extra-ca.js';
import {setExeState} from '../../../src/core/self/installation.js';
import {checkListing, compareReleaseVersions} from '../../../src/core/self/release.js';
import {selfUpdate, type SelfUpdateOptions} from '../../../src/core/self/update.js';
import {have} from '../../helpers/capabilities.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {ARCHIVE, EXE_NAME, makeRelease, makeTestKey, sha256, sign, type TestKey} from '../../exe/release.js';
import {makeCertificate, serveDir, setRedirects, type Served} from '../../exe/serve.js';

/**
 * selfUpdate() (issue 46) against releases on a TLS server on 127.0.0.1, signed by a test key
 * passed as its releaseKey: the signature is checked first, then VERSION, the archive and the
 * unpacked executable against the signed list; a downgrade, an unsigned or altered release, an
 * https -> http redirect and archives holding a link or another name are refused, leaving the
 * installed executable as it was. The "executables" are shell scripts that append to a marker
 * file whenever they run: after a refusal the marker must not exist (nothing downloaded ran).
 */

const READY = have('python3') && have('openssl') && have('tar') && have('xz');
const WHY = 'needs python3, openssl, tar and xz';

let tmp: {dir: string; cleanup: () => void};
let key: TestKey;
let other: TestKey;
let tls: Served;
let plain: Served;
let marker: string;
let victim: string;
const RELEASES: Record<string, string> = {};

/** A release's executable: says its version, and leaves a trace in $MARKER each time it runs. */
function script(dir: string, version: string): string {
  const file = join(dir, `exe-${version}`);
  writeFileSync(file, `#!/bin/sh\necho "ran $0 $*" >> "$MARKER"\necho "cudaenv/${version} linux-x64 node-v26.0.0"\n`, {mode: 0o755});
  return file;
}

beforeAll(async () => {
  if (!READY) return;
  tmp = makeTempDir('cudaenv-self-update-core-');
  key = makeTestKey(tmp.dir);
  other = makeTestKey(tmp.dir, 'other-key');
  const root = join(tmp.dir, 'served');
  const bins = join(tmp.dir, 'bins');
  mkdirSync(bins);
  marker = join(tmp.dir, 'marker');
  // What a symbolic or hard link in an archive would name: a local file that must stay as it is (mode 644, not run).
  victim = join(tmp.dir, 'victim.sh');
  writeFileSync(victim, `#!/bin/sh\necho "victim ran" >> "${marker}"\n`, {mode: 0o644});
  const release = (name: string, version: string, extra: Partial<Parameters<typeof makeRelease>[1]> = {}) => {
    RELEASES[name] = makeRelease(join(root, name), {version, exe: script(bins, `${version}-${name}`), key, ...extra});
  };
  release('good', '0.6.0');
  release('older', '0.0.1');
  release('nosig', '0.6.0');
  rmSig(RELEASES.nosig!);
  release('othersig', '0.6.0');
  sign(RELEASES.othersig!, other);
  release('tampered', '0.6.0');
  // An attacker's SHA256SUMS: the signature no longer matches it.
  const sums = join(RELEASES.tampered!, 'SHA256SUMS');
  writeFileSync(sums, readFileSync(sums, 'utf8').replace(/^[0-9a-f]{64}(?=  VERSION)/m, 'a'.repeat(64)));
  release('swapped', '0.6.0');
  // The signed list is intact, the archive is another one.
  renameSync(join(RELEASES.older!, ARCHIVE), join(RELEASES.swapped!, ARCHIVE));
  makeRelease(join(root, 'older'), {version: '0.0.1', exe: join(RELEASES.swapped!, EXE_NAME), key});
  release('symlink', '0.6.0', {contents: {kind: 'symlink', target: victim}});
  release('hardlink', '0.6.0', {contents: {kind: 'hardlink', target: victim}});
  release('traversal', '0.6.0', {contents: {kind: 'traversal'}});
  release('two', '0.6.0', {contents: {kind: 'two-members'}});
  // The running executable is this release's: it lists no archive to download (and serves none).
  release('current', '0.5.0');
  const redirects = join(tmp.dir, 'redirects.json');
  const cert = makeCertificate(tmp.dir);
  tls = await serveDir(root, {tls: cert, redirects});
  plain = await serveDir(root);
  setRedirects(redirects, {'/to-http/SHA256SUMS': `${plain.url}/good/SHA256SUMS`, '/to-https/SHA256SUMS': `${tls.url}/good/SHA256SUMS`});
  for (const f of ['SHA256SUMS.sig', 'VERSION', EXE_NAME, ARCHIVE]) setRedirectsAlso(redirects, f);
  // As NODE_EXTRA_CA_CERTS does for the executable: the test's certificate authority is trusted.
  deferExtraCaCerts(cert.cert);
});
afterAll(() => {
  tls?.close();
  plain?.close();
  tmp?.cleanup();
});

function rmSig(dir: string): void {
  renameSync(join(dir, 'SHA256SUMS.sig'), join(dir, '..', `${Date.now()}-unused.sig`));
}

/** The files of /to-https/ other than SHA256SUMS redirect to good/ too (an https -> https redirect is followed). */
function setRedirectsAlso(file: string, name: string): void {
  const map = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
  map[`/to-https/${name}`] = `${tls.url}/good/${name}`;
  writeFileSync(file, JSON.stringify(map));
}

let installs = 0;
/** An install as install.sh leaves it: the running cudaenv 0.5.0 (a script of its own) and its receipt naming BASE. */
function installed(base: string, exe?: string): {dir: string; exe: string; before: string} {
  rmSync(marker, {force: true});
  const dir = join(tmp.dir, `install-${++installs}`, 'bin');
  mkdirSync(dir, {recursive: true});
  const path = join(dir, 'cudaenv');
  writeFileSync(path, exe ? readFileSync(exe) : `#!/bin/sh\necho "ran installed $*" >> "$MARKER.installed"\n`, {mode: 0o755});
  writeFileSync(join(dir, '.cudaenv-receipt.json'), JSON.stringify({installer: 'install.sh', base, arch: 'x64'}));
  setExeState({root: join(tmp.dir, 'store', 'exe', '0.5.0-000000000000'), buildId: '0.5.0-000000000000', version: '0.5.0', modules: {}});
  return {dir, exe: path, before: sha256(path)};
}

async function update(exe: string, options: SelfUpdateOptions = {}) {
  return selfUpdate(exe, {PATH: '/usr/bin:/bin', MARKER: marker}, {releaseKey: key.publicPem, ...options});
}

/** Refused with MESSAGE; the install as it was, nothing left behind, nothing downloaded ran. */
async function refused(release: string, message: string | RegExp, options: SelfUpdateOptions = {}): Promise<CudaenvError> {
  const {dir, exe, before} = installed(`${tls.url}/${release}`);
  const error = await update(exe, options).then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(CudaenvError);
  expect((error as Error).message).toMatch(message);
  expect(sha256(exe)).toBe(before);
  expect(readdirSync(dir).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
  expect(existsSync(marker)).toBe(false);
  expect(statSync(victim).mode & 0o777).toBe(0o644);
  return error as CudaenvError;
}

describeIf(READY, WHY)('selfUpdate against signed releases over TLS', () => {
  test('a release signed by the trusted key: replaced by a rename; the new executable ran once, after the checks (--version)', async () => {
    const {dir, exe} = installed(`${tls.url}/good`);
    const inode = statSync(exe).ino;
    const result = await update(exe);
    expect(result).toEqual({path: exe, from: 'cudaenv/0.5.0', to: 'cudaenv/0.6.0', updated: true, base: `${tls.url}/good`});
    expect(sha256(exe)).toBe(sha256(join(RELEASES.good!, EXE_NAME)));
    expect(statSync(exe).ino).not.toBe(inode);
    expect(statSync(exe).mode & 0o777).toBe(0o755);
    expect(readdirSync(dir).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
    // The marker proves the check below can fail: the verified executable did run (its probe).
    expect(readFileSync(marker, 'utf8')).toMatch(/^ran \S+\/\.cudaenv-update-\w+\/x\/cudaenv --version\n$/);
    expect(readFileSync(join(RELEASES.good!, EXE_NAME), 'utf8')).toContain('ran $0');
  });

  test('the running executable is the release\'s: known from the signed SHA256SUMS alone, no archive downloaded (issue 44)', async () => {
    const {exe, before} = installed(`${tls.url}/current`, join(RELEASES.current!, EXE_NAME));
    // The release's archive is gone from the server: a download of it would fail.
    renameSync(join(RELEASES.current!, ARCHIVE), join(tmp.dir, 'current-archive'));
    const result = await update(exe);
    expect(result).toMatchObject({updated: false, from: 'cudaenv/0.5.0', to: 'cudaenv/0.5.0'});
    expect(sha256(exe)).toBe(before);
  });

  test('an https -> https redirect is followed', async () => {
    const {exe} = installed(`${tls.url}/to-https`);
    expect((await update(exe)).updated).toBe(true);
  });

  describe('refused, the installed executable unchanged and nothing downloaded run', () => {
    test('a release without SHA256SUMS.sig', async () => {
      const e = await refused('nosig', /\/nosig\/SHA256SUMS\.sig does not exist: the release at that base is not signed, so nothing was replaced$/);
      expect(e.hint).toContain('signed by its release key');
    });

    test('a release signed by another key', async () => {
      const e = await refused('othersig', /\/othersig\/SHA256SUMS\.sig is not a signature of \S+\/othersig\/SHA256SUMS by cudaenv's release key: nothing was replaced$/);
      expect(e.hint).toContain('not a cudaenv release as published');
    });

    test('a SHA256SUMS altered after signing', async () => {
      await refused('tampered', /tampered\/SHA256SUMS\.sig is not a signature of \S+\/tampered\/SHA256SUMS by cudaenv's release key/);
    });

    test('an archive other than the one the signed list names', async () => {
      await refused('swapped', new RegExp(`swapped/${ARCHIVE.replaceAll('.', '\\.')} has SHA-256 [0-9a-f]{64}, but SHA256SUMS says [0-9a-f]{64}: nothing was replaced`));
    });

    test('an older release (0.0.1 over 0.5.0) without allowDowngrade; with it, installed', async () => {
      const e = await refused('older', /the release at \S+\/older is cudaenv 0\.0\.1, older than this cudaenv 0\.5\.0: nothing was replaced$/);
      expect(e.hint).toContain('cudaenv self-update --allow-downgrade');
      const {exe} = installed(`${tls.url}/older`);
      expect(await update(exe, {allowDowngrade: true})).toMatchObject({updated: true, to: 'cudaenv/0.0.1'});
    });

    test('a redirect from https to http', async () => {
      const e = await refused('to-http', /cannot download \S+\/to-http\/SHA256SUMS: \S+ redirects to http:\/\/127\.0\.0\.1:\d+\/good\/SHA256SUMS: a redirect from https to plain http is refused/);
      expect(e.hint).toContain('no redirect to plain http');
    });

    test('an archive whose cudaenv is a symbolic link (to a local script): not unpacked, the script neither made executable nor run', async () => {
      await refused('symlink', new RegExp(`${ARCHIVE.replaceAll('.', '\\.')} holds cudaenv as a symbolic link \\(l.* cudaenv -> ${victim}\\), not a regular file: nothing was unpacked or replaced`));
    });

    test('an archive whose cudaenv is a hard link', async () => {
      await refused('hardlink', /holds cudaenv as a hard link \(h.*\), not a regular file/);
    });

    test('an archive whose member is ../cudaenv', async () => {
      await refused('traversal', /holds "\.\.\/cudaenv", not cudaenv: nothing was unpacked or replaced/);
    });

    test('an archive with a second member', async () => {
      await refused('two', /holds 2 members \("cudaenv", "cudaenv\.d\/other"\), not only cudaenv/);
    });
  });
});

describe('release versions and archive listings', () => {
  test('versions in semantic-version order', () => {
    const ordered = ['0.0.1', '0.1.0', '0.9.0', '0.10.0', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '2.0.0'];
    for (let i = 0; i < ordered.length; i++) {
      for (let j = 0; j < ordered.length; j++) expect([ordered[i], ordered[j], Math.sign(compareReleaseVersions(ordered[i]!, ordered[j]!))]).toEqual([ordered[i], ordered[j], Math.sign(i - j)]);
    }
  });

  test('a listing with one regular file cudaenv passes; a device is refused', () => {
    expect(() => checkListing('cudaenv\n', '-rwxr-xr-x 0/0 152 2026-01-01 00:00 cudaenv\n', 'a.tar.xz')).not.toThrow();
    expect(() => checkListing('cudaenv\n', 'crw-r--r-- 0/0 1,3 2026-01-01 00:00 cudaenv\n', 'a.tar.xz')).toThrow('a.tar.xz holds cudaenv as a character device');
  });
});
