import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {chmodSync, chownSync, lstatSync, mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCli, terminateWhenReady} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeStore, openUp} from '../core/link/fixtures.js';
import {canDropToNobody, cliForNobody, NOBODY, runCliAsNobody} from '../helpers/nobody.js';
import {probeNamespaces} from '../../src/core/link/isolate.js';
import {describeIf, testIf} from '../helpers/skip.js';
import {NEEDS} from '../helpers/capabilities.js';

const probe = probeNamespaces();
const describeNs = describeIf(probe.ok, `${NEEDS.mountNamespace}: ${probe.ok ? '' : probe.reason}`);

let dir: string;
let cleanup: () => void;
let store: string;
let env: NodeJS.ProcessEnv;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
  openUp(dir);
  store = join(dir, 'store');
  makeStore(store, ['12.4.1']);
  env = cliEnv(store, {HOME: dir});
});
afterEach(() => cleanup());

const SYSTEM = '/usr/local/cuda';
const before = () => {
  try {
    const st = lstatSync(SYSTEM);
    return {ino: st.ino, kind: st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : 'other'};
  } catch {
    return null;
  }
};
const SHOW = 'sed -n "s/.*\\"version\\": *\\"\\([0-9.]*\\)\\".*/\\1/p" /usr/local/cuda/version.json | head -n 1; id -u; echo "$CUDA_HOME"';

describeNs('cudaenv exec --isolate (real /usr/local/cuda, real unshare)', () => {
  test('as root: the command sees the version at /usr/local/cuda; the machine does not', () => {
    const was = before();
    const r = runCli(['exec', '--isolate', '--cuda', '12.4', '--', 'sh', '-c', SHOW], {env});
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`12.4.1\n${process.getuid!()}\n${join(store, 'versions', '12.4.1')}\n`);
    expect(before()).toEqual(was);
  });

  testIf(canDropToNobody, 'needs root and setpriv (util-linux) to run as nobody')('as an ordinary user (unprivileged user namespace): the same, and the command runs as that user', () => {
    const r = runCliAsNobody(['exec', '--isolate', '--cuda', '12.4', '--', 'sh', '-c', SHOW], env, dir);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`12.4.1\n65534\n${join(store, 'versions', '12.4.1')}\n`);
  });

  test('the version comes from .cuda-version like plain exec; the exit status passes through', () => {
    mkdirSync(join(dir, 'p'));
    writeFileSync(join(dir, 'p', '.cuda-version'), '12\n');
    const r = runCli(['exec', '--isolate', '--', 'sh', '-c', 'test -e /usr/local/cuda/bin/nvcc && exit 42'], {env, cwd: join(dir, 'p')});
    expect(r.status).toBe(42);
  });

  const signalsReach = async (who: 'root' | 'nobody'): Promise<void> => {
    if (who === 'nobody') {
      // nobody's own HOME inside the test's directory (it may write there; root's is not its).
      const home = join(dir, 'nobody-home');
      mkdirSync(home);
      chownSync(home, 65534, 65534);
      env = {...env, HOME: home};
    }
    const {out, code} = who === 'nobody'
      ? await terminateWhenReady(['exec', '--isolate', '--cuda', '12.4'], env, NOBODY, cliForNobody())
      : await terminateWhenReady(['exec', '--isolate', '--cuda', '12.4'], env);
    expect(out).toContain('got-term');
    expect(code).toBe(3);
  };
  test('signals reach the command (as root)', () => signalsReach('root'));
  testIf(canDropToNobody, 'needs root and setpriv (util-linux) to run as nobody')('signals reach the command (as nobody)', () => signalsReach('nobody'));
});

describe('cudaenv exec --isolate where it cannot work', () => {
  test('system is not a version to isolate', () => {
    const r = runCli(['exec', '--isolate', '--', 'true'], {env});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--isolate needs a CUDA version');
  });

  test('user namespaces disabled: one line saying so and suggesting cudaenv link', () => {
    // unshare as util-linux behaves when the kernel refuses (kernel.unprivileged_userns_clone=0,
    // user.max_user_namespaces=0): this message and status 1, before running anything.
    const fake = join(dir, 'fakebin');
    mkdirSync(fake);
    writeFileSync(join(fake, 'unshare'), '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n');
    chmodSync(join(fake, 'unshare'), 0o755);
    const fenv = {...env, PATH: `${fake}:/usr/bin:/bin`};
    const r = canDropToNobody ? runCliAsNobody(['exec', '--isolate', '--cuda', '12.4', '--', 'touch', join(dir, 'ran')], fenv, dir) : runCli(['exec', '--isolate', '--cuda', '12.4', '--', 'touch', join(dir, 'ran')], {env: fenv});
    expect(r.status).toBe(1);
    const why = canDropToNobody || process.getuid?.() !== 0 ? 'unprivileged user namespaces are disabled on this machine' : 'cannot create a mount namespace';
    expect(r.stderr).toBe(`cudaenv: --isolate: ${why} (unshare: unshare failed: Operation not permitted); use \`sudo cudaenv link 12.4\` to switch /usr/local/cuda machine-wide instead\n`);
    expect(() => lstatSync(join(dir, 'ran'))).toThrow();
  });
});
