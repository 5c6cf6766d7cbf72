import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, cliEnv, runCli, terminateWhenReady} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {CAN_MOUNT_NAMESPACE, NEEDS} from '../helpers/capabilities.js';
import {testIf} from '../helpers/skip.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {registerToolkit} from '../../src/core/toolkits/register.js';
import {pathsFor} from '../../src/core/store/paths.js';

let dir: string;
let cleanup: () => void;
let store: string;
let env: NodeJS.ProcessEnv;
beforeEach(async () => {
  ({dir, cleanup} = makeTempDir());
  store = join(dir, 'store');
  env = cliEnv(store, {PATH: `/usr/bin:/bin`, LD_LIBRARY_PATH: '/opt/mine'});
  // Registered in-process (what `cudaenv add` does; add-ls.test.ts runs the command).
  for (const v of ['11.8.0', '12.4.1']) await registerToolkit(pathsFor(store), makeFakeToolkit(join(dir, `cuda-${v}`), {version: v}));
});
afterEach(() => cleanup());

describe('cudaenv exec', () => {
  test('runs the command with the version\'s environment', () => {
    const r = runCli(['exec', '--cuda', '12.4', '--', 'sh', '-c', 'printf "%s\\n" "$PATH" "$CUDA_HOME" "$CUDA_PATH" "$LD_LIBRARY_PATH"; nvcc --version | tail -2'], {env});
    const v = join(store, 'versions', '12.4.1');
    expect(r.stdout.split('\n').slice(0, 5)).toEqual([`${v}/bin:/usr/bin:/bin`, v, v, `${v}/lib64:/opt/mine`, 'Cuda compilation tools, release 12.4, V12.4.131']);
  });

  test('a version active in the calling shell does not leak into the command', () => {
    const old = join(store, 'versions', '11.8.0');
    const r = runCli(['exec', '--cuda', '12.4', '--ld-library-path', 'none', '--', 'sh', '-c', 'printf "%s\\n" "$PATH" "$LD_LIBRARY_PATH"'],
      {env: {...env, PATH: `${old}/bin:/usr/bin:/bin`, LD_LIBRARY_PATH: `${old}/lib64:/opt/mine`}});
    expect(r.stdout).toBe(`${join(store, 'versions', '12.4.1')}/bin:/usr/bin:/bin\n/opt/mine\n`);
  });

  test('passes the exit status through, and 127 for a missing command', () => {
    expect(runCli(['exec', '--cuda', '11', '--', 'sh', '-c', 'exit 42'], {env}).status).toBe(42);
    const r = runCli(['exec', '--cuda', '11', '--', 'no-such-program-xyz'], {env});
    expect(r.status).toBe(127);
    expect(r.stderr).toContain('cannot run no-such-program-xyz: command not found');
  });

  test('a version written where the command goes (nvm\'s `nvm exec 18 node`): the error says to name it with --cuda', () => {
    for (const [word, version] of [['12.4', '12.4'], ['cuda-11.8', '11.8'], ['latest', 'latest']]) {
      const r = runCli(['exec', word, 'sh', '-c', 'echo "$1"', 'sh', 'it\'s'], {env});
      expect(r.status).toBe(127);
      expect(r.stderr).toBe(`cudaenv: cannot run ${word}: command not found\nTo run sh with CUDA ${version}, name the version with --cuda: cudaenv exec --cuda ${version} sh -c 'echo "$1"' sh 'it'\\''s'\n`);
    }
    // With the `--` the docs show after it (`cudaenv exec 13.0 -- nvcc --version`): the command is the word after it.
    const dashed = runCli(['exec', '12.4', '--', 'sh', '-c', 'true'], {env});
    expect(dashed.status).toBe(127);
    expect(dashed.stderr).toBe('cudaenv: cannot run 12.4: command not found\nTo run sh with CUDA 12.4, name the version with --cuda: cudaenv exec --cuda 12.4 -- sh -c true\n');
    // A word that is no version keeps the plain hint; a program that exists under a version's name runs.
    expect(runCli(['exec', 'no-such-program-xyz', 'x'], {env}).stderr).toContain('Check the name, or that the selected toolkit provides it');
    const bin = join(dir, 'odd-bin');
    mkdirSync(bin);
    writeFileSync(join(bin, '12.4'), '#!/bin/sh\necho ran "$@"\n', {mode: 0o755});
    expect(runCli(['exec', '12.4', 'x'], {env: {...env, PATH: `${bin}:/usr/bin:/bin`}}).stdout).toBe('ran x\n');
  });

  // /opt is replaced in a private mount namespace: the scan looks where toolkits really live.
  testIf(CAN_MOUNT_NAMESPACE, NEEDS.mountNamespace)('a version not installed but on this machine (/opt/cuda-12.8, unregistered): the hint is the `cudaenv add` that registers it', () => {
    const fake = makeFakeToolkit(join(dir, 'opt-cuda'), {version: '12.8.1'});
    const inNs = (spec: string, args = ['exec', '--cuda', spec, 'true']) => spawnSync('unshare', ['-m', 'sh', '-c',
      'mount -t tmpfs none /opt && mkdir "/opt/cuda-12.8" && mount --bind "$1" /opt/cuda-12.8 && ln -s cuda-12.8 /opt/cuda && shift && exec "$@"',
      'sh', fake, process.execPath, CLI, ...args], {env: {...env, CUDAENV_VERSION: spec}, encoding: 'utf8'});
    const r = inNs('12.8');
    expect(r.status).toBe(1);
    // The directory itself, not the link to it; the version as the toolkit states it.
    expect(r.stderr).toBe('cudaenv: CUDA 12.8 is not installed (--cuda)\nCUDA 12.8.1 is on this machine at /opt/cuda-12.8, not registered: register it with `cudaenv add /opt/cuda-12.8` (or install one with `cudaenv install 12.8`).\n');
    // `current` (the fast path) says the same of the version selected.
    expect(inNs('12.8', ['current']).stderr).toBe('cudaenv: 12.8 (set by CUDAENV_VERSION) is not installed\nCUDA 12.8.1 is on this machine at /opt/cuda-12.8, not registered: register it with `cudaenv add /opt/cuda-12.8` (or install one with `cudaenv install 12.8`).\n');
    // A spec it does not match keeps the plain hint.
    expect(inNs('12.9').stderr).toBe('cudaenv: CUDA 12.9 is not installed (--cuda)\nInstall it with `cudaenv install 12.9`, or register an existing toolkit with `cudaenv add PATH`.\n');
  });

  test('forwards signals to the command and reports them as 128+N', async () => {
    const {out, code} = await terminateWhenReady(['exec', '--cuda', '11'], env);
    expect(out).toContain('got-term');
    expect(code).toBe(3);
  });

  test('a version that is not installed is refused before running anything', () => {
    const r = runCli(['exec', '--cuda', '12.9', '--', 'true'], {env});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('CUDA 12.9 is not installed (--cuda)');
  });
});
