import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, readFileSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {testIf} from '../helpers/skip.js';
import {CAN_MOUNT_NAMESPACE, NEEDS} from '../helpers/capabilities.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';

// The launcher on PATH (bin/cudaenv): Node starts with the loader's variables cleared, and the
// commands get the user's values. The oracle is the real loader: node itself fails under them.
const HAVE_CC = spawnSync('cc', ['--version'], {stdio: 'ignore'}).status === 0;
const NODE_LINKS_LIBSTDCXX = /libstdc\+\+\.so\.6/.test(spawnSync('ldd', [process.execPath], {encoding: 'utf8'}).stdout ?? '');
const BIN = join(REPO_ROOT, 'bin');

describe('bin/cudaenv, the launcher', () => {
  const {dir, cleanup} = makeTempDir();
  afterAll(cleanup);
  const oldLib = join(dir, 'old-libstdcxx');
  const store = join(dir, 'store');
  const env = (extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({PATH: `${BIN}:/usr/bin:/bin`, HOME: dir, CUDAENV_DIR: store, ...extra});

  beforeAll(() => {
    // A libstdc++.so.6 with none of the GLIBCXX_* versions a C++ program asks for: an "old" one.
    if (!HAVE_CC) return;
    mkdirSync(oldLib, {recursive: true});
    writeFileSync(join(dir, 'empty.c'), 'int cudaenv_test_old_libstdcxx;\n');
    const cc = spawnSync('cc', ['-shared', '-fPIC', '-Wl,-soname,libstdc++.so.6', '-o', join(oldLib, 'libstdc++.so.6'), join(dir, 'empty.c')], {encoding: 'utf8'});
    if (cc.status !== 0) throw new Error(cc.stderr);
  });

  const t = testIf(HAVE_CC && NODE_LINKS_LIBSTDCXX, HAVE_CC ? `${process.execPath} does not link libstdc++ dynamically` : 'needs cc (apt-get install gcc)');

  t('an old libstdc++ first on LD_LIBRARY_PATH stops node, not cudaenv; exec hands the user\'s value on', () => {
    const broken = spawnSync(process.execPath, ['-e', '0'], {env: env({LD_LIBRARY_PATH: oldLib}), encoding: 'utf8'});
    expect(broken.status).not.toBe(0);
    expect(broken.stderr).toMatch(/GLIBCXX_[\d.]+/);
    const version = spawnSync('cudaenv', ['--version'], {env: env({LD_LIBRARY_PATH: oldLib}), encoding: 'utf8'});
    expect(version.stderr).toBe('');
    expect(version.stdout).toMatch(/^cudaenv\/\d+\.\d+\.\d+ /);
    const exec = spawnSync('cudaenv', ['exec', '--', 'sh', '-c', 'printf "%s|%s|%s" "$LD_LIBRARY_PATH" "${LD_PRELOAD-unset}" "${CUDAENV_USER_VARS-unset}"'], {env: env({LD_LIBRARY_PATH: oldLib}), encoding: 'utf8'});
    expect(exec.stdout).toBe(`${oldLib}|unset|unset`);
  });

  t('doctor analyses the user\'s LD_LIBRARY_PATH, not the launcher\'s empty one', () => {
    // An empty entry (the current directory) is one doctor warns about, quoting the value.
    const value = `${oldLib}::/nonexistent-dir`;
    const r = spawnSync('cudaenv', ['doctor', '--json'], {env: env({LD_LIBRARY_PATH: value}), encoding: 'utf8'});
    const finding = JSON.parse(r.stdout).findings.find((f: {id: string}) => f.id === 'env.ld-library-path-empty-entry');
    expect(finding.evidence).toEqual([`LD_LIBRARY_PATH=${value}`]);
  });

  t('an old libstdc++ in LD_PRELOAD stops node, not cudaenv; an empty LD_PRELOAD stays set and empty', () => {
    const preload = join(oldLib, 'libstdc++.so.6');
    expect(spawnSync(process.execPath, ['-e', '0'], {env: env({LD_PRELOAD: preload})}).status).not.toBe(0);
    const r = spawnSync('cudaenv', ['exec', '--', 'sh', '-c', 'printf "%s|%s" "$LD_PRELOAD" "${LD_LIBRARY_PATH-unset}"'], {env: env({LD_PRELOAD: preload}), encoding: 'utf8'});
    expect(r.stdout).toBe(`${preload}|unset`);
    const empty = spawnSync('cudaenv', ['exec', '--', 'sh', '-c', 'printf "[%s]" "${LD_LIBRARY_PATH-unset}"'], {env: env({LD_LIBRARY_PATH: ''}), encoding: 'utf8'});
    expect(empty.stdout).toBe('[]');
  });

  t('the shell integration calls the launcher: use works in a bash whose LD_LIBRARY_PATH breaks node', () => {
    const tk = makeFakeToolkit(join(dir, 'tk'), {version: '12.4.1'});
    expect(spawnSync('cudaenv', ['add', tk], {env: env({})}).status).toBe(0);
    const script = 'eval "$(cudaenv init bash)" && cudaenv use 12.4.1 >/dev/null 2>&1; printf "%s|%s" "$CUDA_HOME" "$LD_LIBRARY_PATH"';
    const r = spawnSync('bash', ['--norc', '-c', script], {env: env({LD_LIBRARY_PATH: oldLib}), encoding: 'utf8'});
    expect(r.stdout).toBe(`${join(store, 'versions', '12.4.1')}|${join(store, 'versions', '12.4.1', 'lib64')}:${oldLib}`);
  });

  test('NODE_EXTRA_CA_CERTS waits for a download: the Node.js the launcher starts does not get it, and programs cudaenv starts get it back', () => {
    // Node.js 20 parses the file as it starts (85 ms for a distribution's bundle; a missing file makes
    // it warn); 22 and later at the first TLS connection. The oracle, the same on every line: what
    // the launcher's Node.js finds in its environment, written by a module it preloads (NODE_OPTIONS reaches it).
    const missing = join(dir, 'no-such-ca.pem');
    const probe = join(dir, 'probe-extra-ca.cjs');
    const seen = join(dir, 'probe-extra-ca.seen');
    writeFileSync(probe, `require('fs').writeFileSync(${JSON.stringify(seen)}, process.env.NODE_EXTRA_CA_CERTS ?? 'unset');\n`);
    const version = spawnSync('cudaenv', ['--version'], {env: env({NODE_EXTRA_CA_CERTS: missing, NODE_OPTIONS: `--require ${probe}`}), encoding: 'utf8'});
    expect(version.stderr).toBe('');
    expect(version.status).toBe(0);
    expect(readFileSync(seen, 'utf8')).toBe('unset');
    const exec = spawnSync('cudaenv', ['exec', '--', 'sh', '-c', 'printf "%s|%s|%s" "$NODE_EXTRA_CA_CERTS" "${CUDAENV_USER_NODE_EXTRA_CA_CERTS-unset}" "${CUDAENV_USER_VARS-unset}"'],
      {env: env({NODE_EXTRA_CA_CERTS: missing}), encoding: 'utf8'});
    expect(exec.stdout).toBe(`${missing}|unset|unset`);
    // --use-openssl-ca changes the trust store itself: then the variable is left to Node.
    const kept = spawnSync('cudaenv', ['--version'], {env: env({NODE_EXTRA_CA_CERTS: missing, NODE_OPTIONS: `--require ${probe} --use-openssl-ca`}), encoding: 'utf8'});
    expect(kept.status).toBe(0);
    expect(readFileSync(seen, 'utf8')).toBe(missing);
  });

  // V8's helper threads: one fewer than the online CPUs (at least one, at most Node's four), so
  // that on a small machine they do not take the main thread's core. The oracle is Node itself:
  // the threads its process has, against a node started with that flag by hand.
  const poolFor = (online: string): number | null => {
    let cpus = 0;
    for (const range of online.split(',')) {
      const m = /^(\d+)(?:-(\d+))?$/.exec(range);
      if (!m) return null;
      cpus += m[2] === undefined ? 1 : Number(m[2]) - Number(m[1]) + 1;
    }
    return cpus >= 1 && cpus <= 4 ? Math.max(1, cpus - 1) : null;
  };
  const poolProbe = (): {probe: string; seen: string} => {
    const probe = join(dir, 'probe-pool.cjs');
    const seen = join(dir, 'probe-pool.seen');
    writeFileSync(probe, `const fs = require('fs');
fs.writeFileSync(${JSON.stringify(seen)}, JSON.stringify({execArgv: process.execArgv.filter((a) => a.startsWith('--v8-pool-size')), threads: fs.readdirSync('/proc/self/task').length}));\n`);
    return {probe, seen};
  };

  test('V8\'s helper threads: one fewer than the online CPUs, at most four; a NODE_OPTIONS that sets them decides', () => {
    const {probe, seen} = poolProbe();
    const expected = poolFor(readFileSync('/sys/devices/system/cpu/online', 'utf8').trim());
    const r = spawnSync('cudaenv', ['--version'], {env: env({NODE_OPTIONS: `--require ${probe}`}), encoding: 'utf8'});
    expect([r.status, r.stderr]).toEqual([0, '']);
    const got = JSON.parse(readFileSync(seen, 'utf8'));
    expect(got.execArgv).toEqual(expected === null ? [] : [`--v8-pool-size=${expected}`]);
    spawnSync(process.execPath, [...(expected === null ? [] : [`--v8-pool-size=${expected}`]), '--require', probe, '-e', '0']);
    expect(got.threads).toBe(JSON.parse(readFileSync(seen, 'utf8')).threads);
    // Set by the user: left to Node.
    const user = spawnSync('cudaenv', ['--version'], {env: env({NODE_OPTIONS: `--require ${probe} --v8-pool-size=3`}), encoding: 'utf8'});
    expect(user.status).toBe(0);
    expect(JSON.parse(readFileSync(seen, 'utf8')).execArgv).toEqual([]);
  });

  testIf(CAN_MOUNT_NAMESPACE, NEEDS.mountNamespace)('V8\'s helper threads on other machines: the online CPUs as /sys lists them', () => {
    const {probe, seen} = poolProbe();
    const online = join(dir, 'online');
    for (const list of ['0', '0-1', '0,2', '0-3', '0-4', '0-7', '0-3,8-11', '0-1,4', 'junk', '']) {
      writeFileSync(online, `${list}\n`);
      const r = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', 'mount --bind "$1" /sys/devices/system/cpu/online && exec cudaenv --version', 'sh', online],
        {env: env({NODE_OPTIONS: `--require ${probe}`}), encoding: 'utf8'});
      expect([list, r.status, r.stderr]).toEqual([list, 0, '']);
      const expected = list === '' ? null : poolFor(list);
      expect([list, JSON.parse(readFileSync(seen, 'utf8')).execArgv]).toEqual([list, expected === null ? [] : [`--v8-pool-size=${expected}`]]);
    }
  });

  test('the clone\'s bin/ on PATH, or a link to bin/cudaenv elsewhere (as npm makes), runs cudaenv', () => {
    const viaPath = spawnSync('bash', ['--norc', '-c', 'cudaenv --version'], {env: env({}), encoding: 'utf8'});
    expect(viaPath.stdout).toMatch(/^cudaenv\/\d/);
    const links = join(dir, 'links');
    mkdirSync(links, {recursive: true});
    symlinkSync(join(BIN, 'cudaenv'), join(links, 'cudaenv'));
    const viaLink = spawnSync('sh', ['-c', 'cudaenv help use'], {env: {...env({}), PATH: `${links}:/usr/bin:/bin`}, encoding: 'utf8'});
    expect(viaLink.status).toBe(0);
    expect(viaLink.stdout).toContain('$ cudaenv use [SPEC]');
  });

  // Issue 37, 2g: the report saw ld.so's warning twice "before Node starts". The launcher's own
  // /bin/sh is loaded under the user's LD_PRELOAD (nothing runs before it), so ld.so warns once for
  // it; Node and what the launcher starts on the way (readlink) no longer have the variable. A
  // second line comes from the program that started the launcher (env here; chroot in the report's
  // image), which ld.so loads under the same LD_PRELOAD.
  testIf(HAVE_CC, 'needs cc (apt-get install gcc)')('a file that is no library in LD_PRELOAD: ld.so warns once, for the launcher\'s /bin/sh, not for Node; check quotes that line and says what to change', () => {
    const junk = join(dir, 'libjunk.so');
    writeFileSync(junk, 'this is not a library\n'); // 22 bytes, as in the report
    const line = `ERROR: ld.so: object '${junk}' from LD_PRELOAD cannot be preloaded (file too short): ignored.`;
    const links = join(dir, 'preload-links');
    mkdirSync(links, {recursive: true});
    symlinkSync(join(BIN, 'cudaenv'), join(links, 'cudaenv'));
    for (const path of [`${BIN}:/usr/bin:/bin`, `${links}:/usr/bin:/bin`]) {
      const r = spawnSync('cudaenv', ['--version'], {env: {...env({LD_PRELOAD: junk}), PATH: path}, encoding: 'utf8'});
      expect([r.status, r.stderr]).toEqual([0, `${line}\n`]);
      expect(r.stdout).toMatch(/^cudaenv\/\d/);
    }
    const viaEnv = spawnSync('/usr/bin/env', ['cudaenv', '--version'], {env: env({LD_PRELOAD: junk}), encoding: 'utf8'});
    expect([viaEnv.status, viaEnv.stderr]).toEqual([0, `${line}\n${line}\n`]);

    writeFileSync(join(dir, 'ok.c'), 'int cudaenv_test_ok(void) { return 1; }\n');
    const lib = join(dir, 'libok.so');
    const cc = spawnSync('cc', ['-shared', '-fPIC', '-o', lib, join(dir, 'ok.c')], {encoding: 'utf8'});
    if (cc.status !== 0) throw new Error(cc.stderr);
    const check = spawnSync('cudaenv', ['check', lib], {env: env({LD_PRELOAD: junk}), encoding: 'utf8'});
    expect(check.status).toBe(0);
    expect(check.stdout).toContain(`note: LD_PRELOAD names ${junk}, which ld.so cannot preload (file too short): programs run without it, each first printing "${line}"; remove it from LD_PRELOAD`);
  });
});
