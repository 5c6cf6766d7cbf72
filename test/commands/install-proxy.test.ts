import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {mkdirSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCliAsync, runLauncherAsync} from '../helpers/cli.js';
import {haveOpenssl, startHttpsMirror, startMirrorServer, writeIndex, writeRelease, type MirrorServer} from '../helpers/mirror.js';
import {describeIf} from '../helpers/skip.js';
import {deadPort, haveTinyproxy, startTinyproxy} from '../helpers/tinyproxy.js';
import {makeTempDir} from '../helpers/tmp.js';

/**
 * Issue 11, a network as offices and clusters have it: the only way out is an HTTP proxy named
 * by https_proxy / http_proxy (and no_proxy for what is local). The proxy is a real one,
 * tinyproxy, on loopback; the mirrors are the project's test mirrors, over TLS (a CONNECT
 * tunnel) and over plain HTTP (absolute-form requests).
 */

let tmp: {dir: string; cleanup: () => void};
let root: string;
let cert: string;
let httpsUrl: string;
let closeHttps: () => Promise<void>;
let plain: MirrorServer;
let n = 0;

/** An install into a fresh store; `--json` unless it is expected to fail (its one line is on stderr). */
function install(mirror: string, env: NodeJS.ProcessEnv, json = true): Promise<{code: number | null; stdout: string; stderr: string}> {
  const store = join(tmp.dir, `store${n++}`);
  return runCliAsync(['install', '12.4.1', '--components', 'cuda_cudart', ...(json ? ['--json'] : [])], cliEnv(store, {CUDAENV_MIRROR: mirror, CUDAENV_RETRY_DELAY_MS: '20', NODE_EXTRA_CA_CERTS: cert, ...env}));
}

function expectInstalled(r: {code: number | null; stdout: string; stderr: string}): void {
  expect({code: r.code, stderr: r.stderr}).toEqual({code: 0, stderr: expect.any(String)});
  expect(JSON.parse(r.stdout)).toMatchObject({version: '12.4.1', status: 'installed'});
}

describeIf(haveTinyproxy && haveOpenssl, 'needs tinyproxy and openssl (apt-get install tinyproxy openssl)')('install through an HTTP proxy', () => {
  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-proxy-');
    root = join(tmp.dir, 'mirror');
    mkdirSync(root);
    writeRelease(root, {label: '12.4.1', components: [{name: 'cuda_cudart', version: '12.4.127', files: {'LICENSE': 'x\n', 'lib/libcudart.so.12': 'not really\n'}}]});
    writeIndex(root, ['12.4.1']);
    const https = await startHttpsMirror(root, tmp.dir);
    ({url: httpsUrl, cert} = https);
    closeHttps = () => https.close();
    plain = await startMirrorServer(root);
  }, 60000);

  afterAll(async () => {
    await closeHttps?.();
    await plain?.close();
    tmp?.cleanup();
  });

  test('an https mirror through a CONNECT tunnel (HTTPS_PROXY), the mirror\'s own certificate checked inside it', async () => {
    const proxy = await startTinyproxy(tmp.dir);
    try {
      expectInstalled(await install(httpsUrl, {HTTPS_PROXY: proxy.url}));
      const port = new URL(httpsUrl).port;
      expect(proxy.log()).toMatch(new RegExp(`CONNECT 127\\.0\\.0\\.1:${port} HTTP/1\\.1`));
      // The tunnel does not make an untrusted mirror trusted.
      const r = await install(httpsUrl, {HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: undefined}, false);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/self[- ]signed certificate/);
      // Through the launcher (NODE_EXTRA_CA_CERTS applied by cudaenv, not at Node's start): the tunnel trusts it too.
      const viaLauncher = await runLauncherAsync(['install', '12.4.1', '--components', 'cuda_cudart', '--json'],
        cliEnv(join(tmp.dir, `store${n++}`), {CUDAENV_MIRROR: httpsUrl, CUDAENV_RETRY_DELAY_MS: '20', NODE_EXTRA_CA_CERTS: cert, HTTPS_PROXY: proxy.url}));
      expectInstalled(viaLauncher);
    } finally {
      await proxy.close();
    }
  }, 60000);

  test('an http mirror through the proxy (http_proxy), asked in absolute form', async () => {
    const proxy = await startTinyproxy(tmp.dir);
    try {
      const before = plain.log.length;
      expectInstalled(await install(plain.url, {http_proxy: proxy.url}));
      expect(proxy.log()).toMatch(new RegExp(`Request \\(file descriptor \\d+\\): GET ${plain.url.replace(/[.]/g, '\\.')}redistrib_12\\.4\\.1\\.json`));
      expect(plain.log.length).toBeGreaterThan(before);
    } finally {
      await proxy.close();
    }
  }, 60000);

  test('a mirror with credentials through the proxy: a request line without them, Basic authorization to the mirror', async () => {
    const guarded = await startMirrorServer(root, {auth: 'bob:pa ss'});
    const proxy = await startTinyproxy(tmp.dir);
    try {
      expectInstalled(await install(guarded.url.replace('http://', 'http://bob:pa%20ss@'), {http_proxy: proxy.url}));
      // The absolute URL of the request line carries no userinfo (RFC 9110 4.2.4): the proxy logs it as sent.
      expect(proxy.log()).toMatch(new RegExp(`GET ${guarded.url.replace(/[.]/g, '\\.')}redistrib_12\\.4\\.1\\.json`));
      expect(proxy.log()).not.toContain('bob');
      expect(guarded.log.filter((l) => l.authorization !== `Basic ${Buffer.from('bob:pa ss').toString('base64')}`)).toEqual([]);
    } finally {
      await proxy.close();
      await guarded.close();
    }
  }, 60000);

  test('no_proxy: a listed host is reached directly, even with the proxy down', async () => {
    const down = `http://127.0.0.1:${await deadPort()}`;
    expectInstalled(await install(httpsUrl, {https_proxy: down, no_proxy: 'localhost,127.0.0.0/8'}));
    expectInstalled(await install(plain.url, {http_proxy: down, NO_PROXY: '127.0.0.1'}));
  }, 60000);

  test('a proxy that wants credentials: without them one line naming the proxy and what to set; with them in the URL it works', async () => {
    const proxy = await startTinyproxy(tmp.dir, {basicAuth: ['builder', 'secret42']});
    try {
      for (const [mirror, variable] of [[httpsUrl, 'https_proxy'], [plain.url, 'http_proxy']] as const) {
        const r = await install(mirror, {[variable]: proxy.url}, false);
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`the proxy ${proxy.url} (from ${variable}) asks for credentials (407`);
        expect(r.stderr).toMatch(/http:\/\/USER:PASSWORD@HOST:PORT/);
        expect(r.stderr).not.toMatch(/\n\s+at /);
        const auth = `http://builder:secret42@127.0.0.1:${proxy.port}`;
        expectInstalled(await install(mirror, {[variable]: auth}));
      }
      expect(proxy.log()).not.toContain('secret42');
    } finally {
      await proxy.close();
    }
  }, 60000);

  test('a proxy that refuses the tunnel, a proxy that is down, and a proxy URL that cannot work: one clear line each, nothing installed', async () => {
    const strict = await startTinyproxy(tmp.dir, {connectPorts: [443]});
    try {
      const r = await install(httpsUrl, {https_proxy: strict.url}, false);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`the proxy ${strict.url.replace(/[.]/g, '\\.')} \\(from https_proxy\\) refused the connection to 127\\.0\\.0\\.1:\\d+ \\(403`));
    } finally {
      await strict.close();
    }
    const down = `http://127.0.0.1:${await deadPort()}`;
    const r = await install(httpsUrl, {https_proxy: down}, false);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`: cannot reach the proxy ${down} (from https_proxy): connect ECONNREFUSED`);
    expect(r.stderr).toMatch(/ECONNREFUSED/);
    const bad = await install(httpsUrl, {ALL_PROXY: 'socks5://127.0.0.1:1080'}, false);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^cudaenv: ALL_PROXY=socks5:\/\/127\.0\.0\.1:1080 cannot be used: .*socks5 proxies are not supported/m);
    for (const out of [r, bad]) expect(out.stderr).not.toMatch(/\n\s+at /);
  }, 60000);
});
