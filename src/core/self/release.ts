import {createPublicKey, verify, type KeyObject} from 'node:crypto';
import {CudaenvError} from '../errors.js';

/**
 * What makes a set of files at a base URL a cudaenv release, checked before anything of it is
 * unpacked or run (issue 46): SHA256SUMS, signed by the release key (SHA256SUMS.sig: the raw
 * 64-byte ed25519 signature of SHA256SUMS's bytes), lists every file with its SHA-256, VERSION
 * (the release's version, one line) among them. install.sh checks the same, in sh and openssl.
 */

/** The files of a release, by name, that self-update and install.sh read. */
export const SUMS = 'SHA256SUMS';
export const SUMS_SIG = 'SHA256SUMS.sig';
export const VERSION_FILE = 'VERSION';

/** True when SIG is KEY's ed25519 signature of DATA. */
export function signatureValid(data: Buffer, sig: Buffer, key: string | KeyObject): boolean {
  if (sig.length !== 64) return false;
  const publicKey = typeof key === 'string' ? createPublicKey(key) : key;
  if (publicKey.asymmetricKeyType !== 'ed25519') throw new Error(`the release key is a ${publicKey.asymmetricKeyType} key, not ed25519`);
  return verify(null, data, publicKey, sig);
}

/** SHA256SUMS's lines (`HEX  NAME` or `HEX *NAME`), by name; a name listed twice is refused. */
export function parseSums(text: string, where: string): Map<string, string> {
  const sums = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = /^([0-9a-f]{64}) [ *]([^\s/]+)$/.exec(line.trim());
    if (!m) throw new CudaenvError(`${where} has a line that is not "SHA-256  NAME": ${JSON.stringify(line.slice(0, 120))}`, {hint: 'The base URL must hold the files of one cudaenv release as published.'});
    if (sums.has(m[2]!)) throw new CudaenvError(`${where} lists ${m[2]} twice`, {hint: 'The base URL must hold the files of one cudaenv release as published.'});
    sums.set(m[2]!, m[1]!);
  }
  return sums;
}

/** The SHA-256 that SHA256SUMS gives for NAME. */
export function expectedSum(sums: Map<string, string>, name: string, where: string): string {
  const sum = sums.get(name);
  if (sum === undefined) throw new CudaenvError(`${where} lists no ${name}`, {hint: 'The base URL must hold the files of one cudaenv release, SHA256SUMS included.'});
  return sum;
}

const RELEASE_VERSION = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?$/;

/** A release's version from its VERSION file: MAJOR.MINOR.PATCH with an optional -PRERELEASE. */
export function parseReleaseVersion(text: string, where: string): string {
  const version = text.trim();
  if (!RELEASE_VERSION.test(version)) throw new CudaenvError(`${where} holds ${JSON.stringify(version.slice(0, 60))}, not a version (MAJOR.MINOR.PATCH)`, {hint: 'The base URL must hold the files of one cudaenv release as published.'});
  return version;
}

/** Semantic-version order: numbers part by part, a pre-release before its release, pre-release parts as semver orders them. */
export function compareReleaseVersions(a: string, b: string): number {
  const x = RELEASE_VERSION.exec(a);
  const y = RELEASE_VERSION.exec(b);
  if (!x || !y) throw new Error(`not versions: ${a}, ${b}`);
  for (let i = 1; i <= 3; i++) {
    const d = Number(x[i]) - Number(y[i]);
    if (d !== 0) return Math.sign(d);
  }
  if (x[4] === y[4]) return 0;
  if (x[4] === undefined) return 1;
  if (y[4] === undefined) return -1;
  const p = x[4].split('.');
  const q = y[4].split('.');
  for (let i = 0; i < Math.max(p.length, q.length); i++) {
    if (p[i] === undefined) return -1;
    if (q[i] === undefined) return 1;
    const pn = /^\d+$/.test(p[i]!);
    const qn = /^\d+$/.test(q[i]!);
    if (pn && qn && Number(p[i]) !== Number(q[i])) return Math.sign(Number(p[i]) - Number(q[i]));
    if (pn !== qn) return pn ? -1 : 1;
    if (p[i] !== q[i]) return p[i]! < q[i]! ? -1 : 1;
  }
  return 0;
}

/**
 * Checks `tar -tv` of an archive: one member, a regular file named `cudaenv`. A symbolic or hard
 * link, a device, a directory, another name (`../cudaenv`, `/x`) or a second member is refused.
 */
export function checkListing(names: string, verbose: string, archive: string): void {
  const list = names.split('\n').filter((l) => l !== '');
  const lines = verbose.split('\n').filter((l) => l !== '');
  const fail = (what: string) => new CudaenvError(`${archive} ${what}: nothing was unpacked or replaced`, {hint: 'A cudaenv release\'s archive holds one regular file, cudaenv. Check the base URL.'});
  if (list.length !== 1 || lines.length !== 1) throw fail(`holds ${list.length} members (${list.slice(0, 5).map((n) => JSON.stringify(n)).join(', ')}), not only cudaenv`);
  if (list[0] !== 'cudaenv') throw fail(`holds ${JSON.stringify(list[0])}, not cudaenv`);
  const type = lines[0]![0];
  if (type !== '-') {
    const kind = {l: 'a symbolic link', h: 'a hard link', d: 'a directory', c: 'a character device', b: 'a block device', p: 'a FIFO'}[type ?? ''] ?? `of type ${JSON.stringify(type)}`;
    throw fail(`holds cudaenv as ${kind} (${lines[0]!.trim()}), not a regular file`);
  }
}
