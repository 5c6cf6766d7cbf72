import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {randomBytes} from 'node:crypto';
import {chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCliAsync, runLauncherAsync} from '../helpers/cli.js';
import {haveOpenssl, sha256, startHttpsMirror, startMirrorServer, startPythonMirror, writeIndex, writeRelease, type ServerStyle} from '../helpers/mirror.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';

/**
 * Issue 11: installs from the kinds of servers real mirrors are. Archives of several MB (half
 * random, half base64 text, so xz really decodes and lags behind loopback): the response body
 * is paused by back-pressure most of the time, and a server that closes the connection sends
 * its FIN while it is - what crashed undici 7 (nodejs/undici#5360) in about half of the runs.
 * Each kind must give N installs out of N, with no stack trace.
 */
const RUNS = 4;
const COMPONENTS = ['cuda_cudart', 'libcublas'];
const havePython = spawnSync('python3', ['-c', 'import http.server'], {stdio: 'ignore'}).status === 0;

let tmp: {dir: string; cleanup: () => void};
let root: string;
const big = new Map<string, Buffer>();
let n = 0;

/** RUNS installs into fresh stores, one after another; every one must succeed and leave a clean store. */
async function installsFrom(url: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<void> {
  const outcomes: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    const store = join(tmp.dir, `store${n++}`);
    const r = await runCliAsync(['install', '12.4.1', '--components', COMPONENTS.join(','), '--json'], cliEnv(store, {CUDAENV_MIRROR: url, CUDAENV_RETRY_DELAY_MS: '20', ...extraEnv}));
    outcomes.push(r.code === 0 ? 'ok' : `exit ${r.code}: ${r.stderr.trim()}`);
    expect(r.stderr).not.toMatch(/\n\s+at /); // never a stack trace
    if (r.code !== 0) continue;
    expect(JSON.parse(r.stdout)).toMatchObject({version: '12.4.1', status: 'installed'});
    const lib = join(store, 'versions', '12.4.1', 'lib64');
    for (const name of COMPONENTS) expect(sha256(readFileSync(join(lib, `${name}.bin`)))).toBe(sha256(big.get(name)!));
    expect(readdirSync(join(store, 'cache')).filter((f) => f.endsWith('.part'))).toEqual([]);
    expect(readdirSync(join(store, 'tmp'))).toEqual([]);
    expect(readdirSync(join(store, 'locks')).filter((f) => f.endsWith('.lock'))).toEqual([]);
  }
  expect(outcomes).toEqual(Array(RUNS).fill('ok'));
}

beforeAll(() => {
  tmp = makeTempDir('cudaenv-mirrors-');
  root = join(tmp.dir, 'mirror');
  mkdirSync(root);
  const files = (name: string): Record<string, {bytes: Buffer} | string> => {
    const data = Buffer.concat([randomBytes(2 << 20), Buffer.from(randomBytes(2 << 20).toString('base64'))]);
    big.set(name, data);
    return {'LICENSE': `${name}\n`, [`lib/${name}.bin`]: {bytes: data}};
  };
  writeRelease(root, {label: '12.4.1', components: COMPONENTS.map((name) => ({name, version: '12.4.127', files: files(name)}))});
  writeIndex(root, ['12.4.1']);
  const sizes = readdirSync(join(root, COMPONENTS[0]!, 'linux-x86_64')).map((f) => readFileSync(join(root, COMPONENTS[0]!, 'linux-x86_64', f)).length);
  expect(sizes[0]).toBeGreaterThan(4 << 20); // several MB each, compressed
}, 120000);

afterAll(() => {
  tmp?.cleanup();
});

/** Every file under `dir`, as text (the store after an install: receipts, settings, caches' names). */
function allText(dir: string): string {
  let out = '';
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    out += `${path}\n`;
    const st = statSync(path);
    if (st.isDirectory()) out += allText(path);
    else if (st.size < 1 << 20) out += readFileSync(path, 'latin1');
  }
  return out;
}

describe('a mirror that asks to slow down', () => {
  test('429, 503 and 408 are retried, waiting as long as Retry-After asks; a longer wait ends at once, saying when to try again', async () => {
    const server = await startMirrorServer(root);
    try {
      const archive = `cuda_cudart/linux-x86_64/${readdirSync(join(root, 'cuda_cudart', 'linux-x86_64'))[0]}`;
      server.faults.set('redistrib_12.4.1.json', [{kind: 'status', status: 429, headers: {'retry-after': '1'}}]);
      // An HTTP-date (whole seconds) about 6 s ahead: still seconds ahead when the archive is asked for, even on a busy machine.
      const soon = new Date(Date.now() + 6000).toUTCString();
      server.faults.set(archive, [{kind: 'status', status: 503, headers: {'retry-after': soon}}, {kind: 'status', status: 408}]);
      // The back-off alone would be 20 ms: only Retry-After makes the waits long.
      const r = await runCliAsync(['install', '12.4.1', '--components', 'cuda_cudart', '--json'], cliEnv(join(tmp.dir, `store${n++}`), {CUDAENV_MIRROR: server.url, CUDAENV_RETRY_DELAY_MS: '20'}));
      expect([r.code, r.stderr]).toEqual([0, '']);
      const seen = (path: string) => server.log.filter((l) => l.path === path);
      expect(seen('redistrib_12.4.1.json').map((l) => l.status)).toEqual([429, 200]);
      expect(seen('redistrib_12.4.1.json')[1]!.at - seen('redistrib_12.4.1.json')[0]!.at).toBeGreaterThanOrEqual(950);
      expect(seen(archive).map((l) => l.status)).toEqual([503, 408, 200]);
      expect(seen(archive)[1]!.at - seen(archive)[0]!.at).toBeGreaterThanOrEqual(900);
      expect(seen(archive)[2]!.at - seen(archive)[1]!.at).toBeLessThan(900);

      server.faults.set('redistrib_12.4.1.json', [{kind: 'status', status: 429, headers: {'retry-after': '3600'}}]);
      const started = Date.now();
      const later = await runCliAsync(['install', '12.4.1', '--components', 'cuda_cudart'], cliEnv(join(tmp.dir, `store${n++}`), {CUDAENV_MIRROR: server.url, CUDAENV_RETRY_DELAY_MS: '20'}));
      expect(later.code).toBe(1);
      expect(Date.now() - started).toBeLessThan(30000);
      expect(later.stderr).toContain(`${server.url}redistrib_12.4.1.json answered HTTP 429 and asks to wait 1.0 h (Retry-After), longer than cudaenv waits by itself (60 s)`);
      expect(later.stderr).toMatch(/Run the command again after \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);
    } finally {
      await server.close();
    }
  }, 120000);
});

describe('a mirror that asks for credentials (Artifactory, Nexus): https://USER:PASSWORD@HOST/', () => {
  test('they go as Basic authorization, to the mirror\'s own host only, and the password is never shown or stored outside the settings', async () => {
    const password = 's@cret:x';
    const mirror = await startMirrorServer(root, {auth: `alice:${password}`});
    const cdn = await startMirrorServer(root);
    try {
      const url = mirror.url.replace('http://', `http://alice:${encodeURIComponent(password)}@`);
      const archive = readdirSync(join(root, 'libcublas', 'linux-x86_64'))[0]!;
      // The manifest comes through a redirect to the mirror's own absolute URL (the credentials go with it),
      // an archive through one to another host (a CDN: they must not).
      mirror.faults.set('redistrib_12.4.1.json', [{kind: 'redirect', to: `${mirror.url}redistrib_12.4.1.json`, times: 1}]);
      mirror.faults.set(`libcublas/linux-x86_64/${archive}`, [{kind: 'redirect', to: `${cdn.url}libcublas/linux-x86_64/${archive}`}]);
      const store = join(tmp.dir, `store${n++}`);
      const r = await runCliAsync(['install', '12.4.1', '--components', COMPONENTS.join(','), '--json'], cliEnv(store, {CUDAENV_MIRROR: url}));
      expect([r.code, r.stderr]).toEqual([0, '']);
      expect(JSON.parse(r.stdout)).toMatchObject({status: 'installed', mirror: mirror.url.replace('http://', 'http://alice:****@')});
      const basic = `Basic ${Buffer.from(`alice:${password}`).toString('base64')}`;
      expect(mirror.log.filter((l) => l.authorization !== basic)).toEqual([]);
      expect(mirror.log.map((l) => l.status)).toContain(302);
      expect(cdn.log.map((l) => [l.path, l.status, l.authorization ?? 'none'])).toEqual([[`libcublas/linux-x86_64/${archive}`, 200, 'none']]);
      const leaked = (text: string) => text.includes(password) || text.includes(encodeURIComponent(password));
      expect(leaked(r.stdout + r.stderr)).toBe(false);
      expect(leaked(allText(store))).toBe(false);

      // A wrong password, and none: each says what to do, and shows no password.
      const wrong = await runCliAsync(['install', '12.4.1', '--components', 'cuda_cudart'], cliEnv(join(tmp.dir, `store${n++}`), {CUDAENV_MIRROR: url.replace('s%40cret', 'wrong')}));
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain(`${mirror.url.replace('http://', 'http://alice:****@')}redistrib_12.4.1.json answered HTTP 401`);
      expect(wrong.stderr).toContain('The mirror refused the credentials in its URL (HTTP 401)');
      expect(wrong.stderr).not.toContain('wrong');
      const none = await runCliAsync(['install', '12.4.1', '--components', 'cuda_cudart'], cliEnv(join(tmp.dir, `store${n++}`), {CUDAENV_MIRROR: mirror.url}));
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('The mirror asks for credentials (HTTP 401): give them in its URL, https://USER:PASSWORD@HOST/...');

      // The setting keeps the URL; showing it hides the password.
      const settingsStore = join(tmp.dir, `store${n++}`);
      // The usual umask, so that the file is made readable by others, as on most machines.
      const umask = process.umask(0o022);
      const set = await runCliAsync(['config', 'mirror', url], cliEnv(settingsStore)).finally(() => process.umask(umask));
      expect(set.code).toBe(0);
      const file = join(settingsStore, 'config.json');
      expect(set.stderr).toContain(`the password of this URL is stored as it is in ${file} (mode 644: other users can read it); chmod 600 it, or give the URL in CUDAENV_MIRROR`);
      // Made private, the file stays so through later writes, and nothing more is said.
      chmodSync(file, 0o600);
      expect((await runCliAsync(['config', 'mirror', url], cliEnv(settingsStore))).stderr).toBe('');
      expect((await runCliAsync(['config', 'ldLibraryPath', 'none'], cliEnv(settingsStore))).code).toBe(0);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const shown = await runCliAsync(['config'], cliEnv(settingsStore));
      expect(shown.stdout).toContain(`mirror = ${mirror.url.replace('http://', 'http://alice:****@')}`);
      expect(leaked(shown.stdout)).toBe(false);
      expect((await runCliAsync(['install', '12.4.1', '--components', 'cuda_cudart', '--json'], cliEnv(settingsStore))).code).toBe(0);
    } finally {
      await mirror.close();
      await cdn.close();
    }
  }, 300000);
});

describe('N out of N installs from every kind of mirror server', () => {
  test.each<[string, ServerStyle]>([
    ['Connection: close after each response (a FIN after every body)', 'close'],
    ['chunked bodies without Content-Length', 'chunked'],
    ['a body ended only by closing the connection (no length, no chunks)', 'eof'],
    ['keep-alive', 'keep-alive'],
  ])('%s', async (_what, style) => {
    const server = await startMirrorServer(root, {style});
    try {
      await installsFrom(server.url);
      expect(server.log.filter((l) => l.path.endsWith('.tar.xz')).length).toBeGreaterThanOrEqual(RUNS * COMPONENTS.length);
    } finally {
      await server.close();
    }
  }, 300000);
});

describeIf(havePython, 'needs python3 (apt-get install python3)')('python3 -m http.server', () => {
  test('N out of N installs (HTTP/1.0, a FIN after every body, no Range)', async () => {
    const server = await startPythonMirror(root);
    try {
      await installsFrom(server.url);
      expect(server.log.filter((l) => l.includes('.tar.xz')).length).toBeGreaterThanOrEqual(RUNS * COMPONENTS.length);
    } finally {
      await server.close();
    }
    expect(existsSync(root)).toBe(true);
  }, 300000);
});

describeIf(haveOpenssl, 'needs openssl to make a certificate (apt-get install openssl)')('https (NVIDIA\'s own mirror is https)', () => {
  test('installs over TLS from a server whose CA is trusted (NODE_EXTRA_CA_CERTS); an untrusted one is one clear line, no stack', async () => {
    const server = await startHttpsMirror(root, tmp.dir);
    const {url, cert} = server;
    try {
      await installsFrom(url, {NODE_EXTRA_CA_CERTS: cert});
      const store = join(tmp.dir, `store${n++}`);
      const r = await runCliAsync(['install', '12.4.1', '--components', COMPONENTS.join(',')], cliEnv(store, {CUDAENV_MIRROR: url}));
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^cudaenv: cannot download https:\/\/127\.0\.0\.1:\d+\/.*: self[- ]signed certificate/m);
      expect(r.stderr).toContain('NODE_EXTRA_CA_CERTS');
      expect(r.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await server.close();
    }
  }, 300000);

  test('through the launcher, which starts Node without NODE_EXTRA_CA_CERTS, the CA is still trusted; a file without certificates is one warning', async () => {
    const server = await startHttpsMirror(root, tmp.dir);
    const {url, cert} = server;
    try {
      const store = join(tmp.dir, `store${n++}`);
      const env = cliEnv(store, {CUDAENV_MIRROR: url, NODE_EXTRA_CA_CERTS: cert});
      const ok = await runLauncherAsync(['install', '12.4.1', '--components', COMPONENTS.join(','), '--json'], env);
      expect({code: ok.code, stderr: ok.stderr}).toEqual({code: 0, stderr: expect.any(String)});
      expect(ok.stderr).not.toContain('warning');
      expect(JSON.parse(ok.stdout)).toMatchObject({version: '12.4.1', status: 'installed'});
      // Node itself would say "Ignoring extra certs from ..." at start; cudaenv says it once, at the download.
      const junk = join(tmp.dir, 'not-a-ca.pem');
      writeFileSync(junk, 'no certificate here\n');
      const bad = await runLauncherAsync(['install', '12.4.1', '--components', COMPONENTS.join(',')], cliEnv(join(tmp.dir, `store${n++}`), {CUDAENV_MIRROR: url, NODE_EXTRA_CA_CERTS: junk}));
      expect(bad.code).toBe(1);
      expect(bad.stderr.match(/warning: NODE_EXTRA_CA_CERTS=.*not-a-ca\.pem: it holds no PEM certificate; ignored, as Node ignores it/g)).toHaveLength(1);
      expect(bad.stderr).toMatch(/self[- ]signed certificate/);
      expect(bad.stderr).not.toMatch(/\n\s+at /);
    } finally {
      await server.close();
    }
  }, 300000);
});
