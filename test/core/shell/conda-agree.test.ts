/**
 * Inside a conda environment whose cudaenv hook is active (its real activate.d script,
 * sourced as conda does), `cudaenv current`, `which`, the shims and the shell hook agree with
 * the hook's toolkit and say it came from the conda environment, even in a project whose
 * .cuda-version names another version; only CUDAENV_VERSION (`cudaenv use`) outranks it.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {pathsFor} from '../../../src/core/store/paths.js';
import {CLI, cliEnv, runCli} from '../../helpers/cli.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {makeStore} from './shell-harness.js';

describe('an active conda environment hook', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  let prefix: string;
  let proj: string;
  let env: NodeJS.ProcessEnv;
  const v = (l: string) => join(store, 'versions', l);

  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-conda-agree-');
    store = join(tmp.dir, 'store');
    await makeStore(store, ['11.8.0', '12.4.1']);
    prefix = join(tmp.dir, 'envs', 'ml');
    mkdirSync(join(prefix, 'conda-meta'), {recursive: true});
    proj = join(tmp.dir, 'proj');
    mkdirSync(proj);
    writeFileSync(join(proj, '.cuda-version'), '12.4\n');
    env = cliEnv(store, {PATH: `${pathsFor(store).shims}:/usr/bin:/bin`});
    delete env.LD_LIBRARY_PATH;
    const r = runCli(['conda', 'hook', 'install', '11.8', '--prefix', prefix, '--ld-library-path', 'none'], {env});
    expect(r.stderr).toBe(r.status === 0 ? r.stderr : '');
    expect(r.status).toBe(0);
  });
  afterAll(() => tmp.cleanup());

  /** A bash that activates the environment as conda does, then runs LINES in the project. */
  function inEnv(lines: string[], extra: NodeJS.ProcessEnv = {}) {
    const script = [
      `eval "$(${process.execPath} ${CLI} init bash)"`,
      `export CONDA_PREFIX='${prefix}'`,
      `. '${join(prefix, 'etc', 'conda', 'activate.d', '~~cudaenv.sh')}'`,
      `cd '${proj}'`, '_cudaenv_hook 2>/dev/null',
      ...lines,
    ].join('\n');
    return spawnSync('bash', ['--norc', '-c', script], {env: {...env, ...extra}, encoding: 'utf8', cwd: proj});
  }

  test('current, which, the shim and the hook all report the hook\'s 11.8, from the conda environment', () => {
    const r = inEnv([
      `${process.execPath} ${CLI} current`,
      `${process.execPath} ${CLI} which nvcc`,
      `'${join(pathsFor(store).shims, 'nvcc')}' --version | grep -o 'release [0-9.]*'`,
      'command -v nvcc', 'echo "CUDA_HOME=$CUDA_HOME"',
    ]);
    expect(r.stdout).toBe([
      `11.8.0 (set by the conda environment ${prefix} (its cudaenv hook))`,
      `${v('11.8.0')}/bin/nvcc`,
      'release 11.8',
      `${v('11.8.0')}/bin/nvcc`,
      `CUDA_HOME=${v('11.8.0')}`,
      '',
    ].join('\n'));
  });

  test('`cudaenv use` (CUDAENV_VERSION) outranks it, everywhere alike', () => {
    const r = inEnv([
      'cudaenv use 12.4 2>/dev/null',
      `${process.execPath} ${CLI} current`,
      `'${join(pathsFor(store).shims, 'nvcc')}' --version | grep -o 'release [0-9.]*'`,
      'command -v nvcc',
    ]);
    expect(r.stdout).toBe([
      '12.4.1 (set by CUDAENV_VERSION)',
      'release 12.4',
      `${v('12.4.1')}/bin/nvcc`,
      '',
    ].join('\n'));
  });

  test('a _CUDAENV_CONDA_PATH_ADDED that names no version of this store is ignored: the project\'s .cuda-version decides', () => {
    const e = {...env, CONDA_PREFIX: prefix, _CUDAENV_CONDA_PATH_ADDED: '/opt/elsewhere/bin'};
    expect(runCli(['current'], {env: e, cwd: proj}).stdout).toBe(`12.4.1 (set by ${join(proj, '.cuda-version')})\n`);
    const shim = spawnSync(join(pathsFor(store).shims, 'nvcc'), ['--version'], {env: e, cwd: proj, encoding: 'utf8'});
    expect(shim.stdout).toContain('release 12.4');
  });
});
