import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, mkdirSync, readdirSync, chownSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCli} from '../../helpers/cli.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {buildLibrary, makeStore, openUp} from '../link/fixtures.js';
import {canDropToNobody, cliForNobody, NOBODY, runCliAsNobody} from '../../helpers/nobody.js';
import {describeIf} from '../../helpers/skip.js';

/**
 * A store shared on a cluster, which users may not write (here: owned by root, every write
 * bit removed, used as `nobody`): everything that only reads it must work.
 */
const describeRo = describeIf(canDropToNobody, 'needs root and setpriv (util-linux) to run as nobody');

let dir: string;
let cleanup: () => void;
let store: string;
let env: NodeJS.ProcessEnv;

function chmodTree(path: string): void {
  for (const name of readdirSync(path, {withFileTypes: true})) {
    const p = join(path, name.name);
    if (name.isDirectory()) chmodTree(p);
    if (!name.isSymbolicLink()) chmodSync(p, name.isDirectory() || name.name === 'nvcc' || name.name.startsWith('nvcc') || p.includes('/shims/') ? 0o555 : 0o444);
  }
}

describeRo('a read-only shared store', () => {
  beforeAll(() => {
    ({dir, cleanup} = makeTempDir());
    openUp(dir);
    store = join(dir, 'shared', 'cudaenv');
    makeStore(store, ['12.2.0', '12.4.1']);
    for (const v of ['12.2.0', '12.4.1']) buildLibrary(join(store, 'versions', v, 'lib64'), 'libcudaenvro.so.1');
    const admin = cliEnv(store, {HOME: dir});
    expect(runCli(['rehash'], {env: admin}).status).toBe(0);
    expect(runCli(['global', '12.4'], {env: admin}).status).toBe(0);
    chmodTree(store);
    chmodSync(store, 0o555);
    mkdirSync(join(dir, 'home'));
    chownSync(join(dir, 'home'), 65534, 65534);
    mkdirSync(join(dir, 'project'));
    writeFileSync(join(dir, 'project', '.cuda-version'), '12.2\n');
    env = cliEnv(store, {HOME: join(dir, 'home'), PATH: '/usr/bin:/bin'});
  });
  afterAll(() => cleanup());

  test('current, ls, which and exec work, by the global default and by .cuda-version', () => {
    expect(runCliAsNobody(['current'], env, dir)).toMatchObject({status: 0, stdout: `12.4.1 (set by the global default ${join(store, 'global')})\n`});
    expect(runCliAsNobody(['ls'], env, dir).status).toBe(0);
    expect(runCliAsNobody(['which', 'nvcc'], env, join(dir, 'project')).stdout).toBe(`${join(store, 'versions', '12.2.0', 'bin', 'nvcc')}\n`);
    const r = runCliAsNobody(['exec', '--', 'sh', '-c', 'echo "$CUDA_HOME"; nvcc --version | tail -n 1'], env, join(dir, 'project'));
    expect(r.stdout).toBe(`${join(store, 'versions', '12.2.0')}\nBuild cuda_12.2.r12.2/compiler.34097967_0\n`);
    expect(r.status).toBe(0);
  });

  test('check reads the libraries', () => {
    const r = runCliAsNobody(['check', join(store, 'versions', '12.4.1', 'lib64')], env, dir);
    expect({status: r.status, stderr: r.stderr}).toEqual({status: 0, stderr: ''});
  });

  test('shims resolve the version from the store\'s plain files', () => {
    const shimEnv = {...env, PATH: `${join(store, 'shims')}:/usr/bin:/bin`};
    const run = (cwd: string) => spawnSync(NOBODY[0], [...NOBODY.slice(1), 'sh', '-c', 'nvcc --version | tail -n 1'], {env: shimEnv, cwd, encoding: 'utf8'});
    expect(run(dir).stdout).toBe('Build cuda_12.4.r12.4/compiler.34097967_0\n');
    expect(run(join(dir, 'project')).stdout).toBe('Build cuda_12.2.r12.2/compiler.34097967_0\n');
  });

  test('use switches a real bash; the check result is reported even though it cannot be cached', () => {
    const script = `eval "$(${process.execPath} ${cliForNobody()} init bash)"; cudaenv use 12.2; echo "$CUDA_HOME"; nvcc --version | tail -n 1`;
    const r = spawnSync(NOBODY[0], [...NOBODY.slice(1), 'bash', '--norc', '--noprofile', '-c', script], {env, cwd: dir, encoding: 'utf8'});
    expect(r.stdout).toBe(`${join(store, 'versions', '12.2.0')}\nBuild cuda_12.2.r12.2/compiler.34097967_0\n`);
    expect(r.stderr).toBe(`cudaenv: now CUDA 12.2.0 (was none); LD_LIBRARY_PATH: added ${join(store, 'versions', '12.2.0', 'lib64')}\n` +
      'cudaenv: CUDA 12.2.0: all 1 library resolves\n');
  });

  test('modulefiles go to a directory of the user\'s choice; the store itself is refused clearly', () => {
    const mine = runCliAsNobody(['modulefiles', '--dir', join(dir, 'home', 'mf')], env, dir);
    expect(mine.status).toBe(0);
    const refused = runCliAsNobody(['modulefiles'], env, dir);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`cannot write modulefiles in ${join(store, 'modulefiles', 'cuda')}`);
  });
});
