import {spawnSync} from 'node:child_process';
import {createHash, generateKeyPairSync, type KeyObject} from 'node:crypto';
import {appendFileSync, copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {HOST_ARCH} from './exe.js';

/**
 * Releases as the release workflow makes them (VERSION, the executable, its archive, SHA256SUMS,
 * SHA256SUMS.sig signed by scripts/sign-release.sh), signed by a key pair the test makes: tests
 * never hold the real release key's private half. They trust the test key by patching its public
 * half into their copy of install.sh (patchInstallSh) or of the executable (patchExecutable), or by
 * passing it to selfUpdate().
 */

export const EXE_NAME = `cudaenv-linux-${HOST_ARCH}`;
export const ARCHIVE = `${EXE_NAME}.tar.xz`;
export const SIGN_RELEASE = join(REPO_ROOT, 'scripts', 'sign-release.sh');

export interface TestKey {
  /** The private key, PEM, in a file of mode 600. */
  privateFile: string;
  /** The public key, PEM, in a file. */
  publicFile: string;
  publicPem: string;
  privateKey: KeyObject;
}

export function makeTestKey(dir: string, name = 'test-key'): TestKey {
  const {privateKey, publicKey} = generateKeyPairSync('ed25519');
  const privateFile = join(dir, `${name}.pem`);
  const publicFile = join(dir, `${name}.pub.pem`);
  writeFileSync(privateFile, privateKey.export({type: 'pkcs8', format: 'pem'}), {mode: 0o600});
  const publicPem = publicKey.export({type: 'spki', format: 'pem'}).toString();
  writeFileSync(publicFile, publicPem);
  return {privateFile, publicFile, publicPem, privateKey};
}

export const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** What the archive holds: the executable as `cudaenv`, or something an attacker would put there. */
export type ArchiveKind = {kind: 'regular'} | {kind: 'symlink'; target: string} | {kind: 'hardlink'; target: string} | {kind: 'traversal'} | {kind: 'two-members'};

const TAR = `
import sys, tarfile
out, kind, exe, target = sys.argv[1:5]
with tarfile.open(out, 'w:xz', preset=0) as t:
    if kind == 'regular':
        t.add(exe, arcname='cudaenv')
    elif kind in ('symlink', 'hardlink'):
        info = tarfile.TarInfo('cudaenv')
        info.type = tarfile.SYMTYPE if kind == 'symlink' else tarfile.LNKTYPE
        info.linkname = target
        info.mode = 0o755
        t.addfile(info)
    elif kind == 'traversal':
        t.add(exe, arcname='../cudaenv')
    elif kind == 'two-members':
        t.add(exe, arcname='cudaenv')
        t.add(exe, arcname='cudaenv.d/other')
`;

export interface ReleaseOptions {
  version: string;
  /** The executable the release ships (copied, or linked when `link`: the 145 MiB build). */
  exe: string;
  key: TestKey;
  /** An existing archive of EXE to serve instead of packing one (dist-exe's). */
  archive?: string;
  contents?: ArchiveKind;
  link?: boolean;
}

/** Writes a signed release into DIR (created); returns DIR. */
export function makeRelease(dir: string, options: ReleaseOptions): string {
  mkdirSync(dir, {recursive: true});
  const put = (from: string, name: string) => (options.link ? symlinkSync(from, join(dir, name)) : copyFileSync(from, join(dir, name)));
  put(options.exe, EXE_NAME);
  const contents = options.contents ?? {kind: 'regular'};
  if (options.archive && contents.kind === 'regular') {
    put(options.archive, ARCHIVE);
  } else {
    const target = 'target' in contents ? contents.target : '';
    const r = spawnSync('python3', ['-c', TAR, join(dir, ARCHIVE), contents.kind, options.exe, target], {encoding: 'utf8'});
    if (r.status !== 0) throw new Error(`packing ${ARCHIVE} failed: ${r.stderr}`);
  }
  writeFileSync(join(dir, 'VERSION'), `${options.version}\n`);
  writeFileSync(join(dir, 'SHA256SUMS'), [EXE_NAME, ARCHIVE, 'VERSION'].map((n) => `${sha256(join(dir, n))}  ${n}\n`).join(''));
  sign(dir, options.key);
  return dir;
}

/** scripts/sign-release.sh with the test key: DIR/SHA256SUMS.sig. */
export function sign(dir: string, key: TestKey): void {
  rmSync(join(dir, 'SHA256SUMS.sig'), {force: true});
  const r = spawnSync('sh', [SIGN_RELEASE, key.privateFile, dir, key.publicFile], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`scripts/sign-release.sh failed: ${r.stderr}`);
}

/** A copy of install.sh that trusts KEY instead of the release key (its RELEASE_KEY lines replaced). */
export function patchInstallSh(installSh: string, out: string, key: TestKey): void {
  const text = readFileSync(installSh, 'utf8');
  const re = /^RELEASE_KEY='-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/=\n]+-----END PUBLIC KEY-----'$/m;
  if (!re.test(text)) throw new Error(`${installSh} has no RELEASE_KEY='...' block`);
  writeFileSync(out, text.replace(re, `RELEASE_KEY='${key.publicPem.trim()}'`), {mode: 0o755});
}

/**
 * A copy of the executable that trusts KEY: the base64 of the release key (in the bundle's source
 * and its code cache) replaced by the test key's, which has the same length. Throws unless found.
 */
export function patchExecutable(exe: string, out: string, realPem: string, key: TestKey): void {
  const body = (pem: string) => pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s/g, '');
  const from = Buffer.from(body(realPem));
  const to = Buffer.from(body(key.publicPem));
  if (from.length !== to.length) throw new Error('the keys\' base64 differ in length');
  const data = readFileSync(exe);
  let count = 0;
  for (let i = data.indexOf(from); i !== -1; i = data.indexOf(from, i + from.length)) {
    to.copy(data, i);
    count++;
  }
  if (count === 0) throw new Error(`${exe} does not hold the release key`);
  writeFileSync(out, data, {mode: 0o755});
}

/** An executable that differs from EXE by one byte appended (ELF ignores it). */
export function variantOf(exe: string, out: string): void {
  copyFileSync(exe, out);
  appendFileSync(out, '\n');
}
