import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {createReadStream, existsSync, mkdirSync, readFileSync, readdirSync, statSync} from 'node:fs';
import {createServer, type Server} from 'node:http';
import {createServer as createHttpsServer, type Server as HttpsServer} from 'node:https';
import type {AddressInfo} from 'node:net';
import {join} from 'node:path';
import {deferExtraCaCerts} from '../../../src/core/remote/extra-ca.js';
import {installRelease} from '../../../src/core/remote/install.js';
import {parseMirror} from '../../../src/core/remote/mirror.js';
import {pathsFor} from '../../../src/core/store/paths.js';
import {listVersions} from '../../../src/core/store/registry.js';
import {archiveRelPath, haveOpenssl, writeIndex, writeRelease} from '../../helpers/mirror.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';

/**
 * Issue 46: an https mirror whose answer redirects to plain http. A real TLS server on loopback
 * (its certificate made here by openssl, trusted the way a user's own CA is: NODE_EXTRA_CA_CERTS,
 * which the launcher defers to the extra-CA mechanism) redirects to a plain http server holding
 * the same files; the download must stop at the redirect, and the http server see no request.
 */
let tmp: {dir: string; cleanup: () => void};
let root: string;
let tls: HttpsServer;
let plain: Server;
let httpsUrl: string;
let httpUrl: string;
const plainLog: string[] = [];
/** path -> where the TLS server redirects it. */
const redirects = new Map<string, string>();
let n = 0;

function serveFile(path: string, res: import('node:http').ServerResponse): void {
  const file = join(root, path || 'index.html');
  if (!file.startsWith(root) || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, {'content-length': statSync(file).size});
  createReadStream(file).pipe(res);
}

const pathOf = (url: string | undefined): string => decodeURIComponent(new URL(url ?? '/', 'http://x').pathname).replace(/^\/+/, '');

beforeAll(async () => {
  tmp = makeTempDir('cudaenv-downgrade-');
  root = join(tmp.dir, 'mirror');
  mkdirSync(root);
  if (!haveOpenssl) return;
  writeRelease(root, {label: '12.4.1', components: [{name: 'cuda_cudart', version: '12.4.127', files: {'lib/libcudart.so.12': 'x'}}]});
  writeRelease(root, {label: '12.4.0', components: [{name: 'cuda_cudart', version: '12.4.99', files: {'lib/libcudart.so.12': 'y'}}]});
  writeIndex(root, ['12.4.0', '12.4.1']);
  const key = join(tmp.dir, 'key.pem');
  const cert = join(tmp.dir, 'cert.pem');
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], {encoding: 'utf8'});
  expect(made.status).toBe(0);
  // What bin/run.cjs does with NODE_EXTRA_CA_CERTS: the https agent trusts this CA besides Node's roots.
  deferExtraCaCerts(cert);
  plain = createServer((req, res) => {
    plainLog.push(pathOf(req.url));
    serveFile(pathOf(req.url), res);
  });
  tls = createHttpsServer({key: readFileSync(key), cert: readFileSync(cert)}, (req, res) => {
    const to = redirects.get(pathOf(req.url));
    if (to !== undefined) {
      res.writeHead(302, {location: to}).end();
      return;
    }
    serveFile(pathOf(req.url).replace(/^moved\//, ''), res);
  });
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
  httpUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}/`;
  httpsUrl = `https://127.0.0.1:${(tls.address() as AddressInfo).port}/`;
});

afterAll(async () => {
  for (const s of [tls, plain]) {
    if (!s) continue;
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
  tmp.cleanup();
});

async function install(label: string, mirror = httpsUrl): Promise<{error?: Error & {code?: string; hint?: string}; paths: ReturnType<typeof pathsFor>}> {
  const paths = pathsFor(join(tmp.dir, `store${n++}`));
  const error = await installRelease({paths, spec: label, mirror: parseMirror(mirror), platform: 'linux-x86_64', components: ['cuda_cudart']})
    .then(() => undefined, (e: Error) => e);
  return {error, paths};
}

describeIf(haveOpenssl, 'needs openssl to make a certificate (apt-get install openssl)')('an https mirror never continues over plain http', () => {
  test('sanity: the TLS mirror installs, and a redirect from https to https is followed', async () => {
    const rel = archiveRelPath({name: 'cuda_cudart', version: '12.4.127'});
    redirects.set(rel, `${httpsUrl}moved/${rel}`);
    try {
      const {error, paths} = await install('12.4.1');
      expect(error).toBeUndefined();
      expect(listVersions(paths).map((v) => v.label)).toEqual(['12.4.1']);
    } finally {
      redirects.clear();
    }
  });

  test('a checksummed manifest redirected to http is refused: what redirected to what, and what to do', async () => {
    redirects.set('redistrib_12.4.1.json', `${httpUrl}redistrib_12.4.1.json`);
    try {
      const before = plainLog.length;
      const {error, paths} = await install('12.4.1');
      expect(error).toMatchObject({
        code: 'network',
        message: `cannot download ${httpsUrl}redistrib_12.4.1.json: ${httpsUrl}redistrib_12.4.1.json redirects to ${httpUrl}redistrib_12.4.1.json: a redirect from https to plain http is refused`,
        hint: expect.stringContaining('give that http:// URL itself as the mirror (--mirror, CUDAENV_MIRROR, the mirror setting)'),
      });
      expect(plainLog.slice(before)).toEqual([]);
      expect(listVersions(paths)).toEqual([]);
    } finally {
      redirects.clear();
    }
  });

  test('an archive redirected to http is refused; nothing is installed or cached, and the http server is never asked', async () => {
    const rel = archiveRelPath({name: 'cuda_cudart', version: '12.4.99'});
    redirects.set(rel, `${httpUrl}${rel}`);
    try {
      const before = plainLog.length;
      const {error, paths} = await install('12.4.0');
      expect(error).toMatchObject({
        code: 'network',
        message: `cannot download ${httpsUrl}${rel}: ${httpsUrl}${rel} redirects to ${httpUrl}${rel}: a redirect from https to plain http is refused`,
        hint: expect.stringMatching(/^The mirror \(or something between it and you\) sends an https download to plain http/),
      });
      expect(plainLog.slice(before)).toEqual([]);
      expect(listVersions(paths)).toEqual([]);
      expect(readdirSync(paths.cache)).toEqual([]);
    } finally {
      redirects.clear();
    }
  });

  test('a plain http mirror named explicitly is used as it is', async () => {
    const {error, paths} = await install('12.4.0', httpUrl);
    expect(error).toBeUndefined();
    expect(listVersions(paths).map((v) => v.label)).toEqual(['12.4.0']);
  });
});
