import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {chooseEnvironment, environmentName, listEnvironments} from '../../../src/core/conda/environments.js';
import {CudaenvError} from '../../../src/core/errors.js';
import {makeTempDir} from '../../helpers/tmp.js';

const tmp = makeTempDir('cudaenv-conda-envs-');
const home = join(tmp.dir, 'home');
const root = join(tmp.dir, 'miniforge3');
const env1 = join(root, 'envs', 'ml');
const other = join(tmp.dir, 'other', 'envs', 'ml');
const loose = join(tmp.dir, 'project', '.env');
const noPath = {PATH: '/nonexistent', HOME: home};

beforeAll(() => {
  for (const p of [root, env1, other, loose]) mkdirSync(join(p, 'conda-meta'), {recursive: true});
  mkdirSync(join(root, 'condabin'), {recursive: true});
  mkdirSync(join(home, '.conda'), {recursive: true});
  writeFileSync(join(home, '.conda', 'environments.txt'), `${root}\n\n${env1}\n${env1}/\n# a comment\nrelative/path\n${join(tmp.dir, 'removed')}\n${loose}\r\n`);
});
afterAll(() => tmp.cleanup());

describe('conda environments', () => {
  test('environments.txt: blank, duplicate, relative and vanished entries are dropped; names as conda shows them', () => {
    const list = listEnvironments({env: noPath});
    expect(list.source).toBe('environments.txt');
    expect(list.environments).toEqual([{prefix: root, name: 'base'}, {prefix: env1, name: 'ml'}, {prefix: loose, name: null}]);
    expect(environmentName(other)).toBe('ml');
  });

  test('no conda and no environments.txt: an empty list that says so', () => {
    expect(listEnvironments({env: {PATH: '/nonexistent', HOME: join(tmp.dir, 'nohome')}})).toEqual({source: 'none', environments: [], warnings: []});
  });

  test('a conda that fails falls back to environments.txt with a warning', () => {
    const bin = join(tmp.dir, 'bin');
    mkdirSync(bin, {recursive: true});
    writeFileSync(join(bin, 'conda'), '#!/bin/sh\necho "CondaError: broken install" >&2\nexit 1\n', {mode: 0o755});
    const list = listEnvironments({env: {PATH: bin, HOME: home}});
    expect(list.source).toBe('environments.txt');
    expect(list.warnings[0]).toContain('CondaError: broken install');
  });

  test('choosing: -p, -n, CONDA_PREFIX; each mistake is a clear error', () => {
    expect(chooseEnvironment({prefix: `${env1}/`, env: noPath})).toEqual({prefix: env1, name: 'ml'});
    expect(chooseEnvironment({name: 'base', env: noPath}).prefix).toBe(root);
    expect(chooseEnvironment({env: {...noPath, CONDA_PREFIX: loose}})).toEqual({prefix: loose, name: null});
    const fails = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return {message: (error as CudaenvError).message, exitCode: (error as CudaenvError).exitCode};
      }
      throw new Error('did not fail');
    };
    expect(fails(() => chooseEnvironment({env: noPath}))).toEqual({message: 'no conda environment is active (CONDA_PREFIX is not set)', exitCode: 2});
    expect(fails(() => chooseEnvironment({name: 'a/b', env: noPath})).exitCode).toBe(2);
    expect(fails(() => chooseEnvironment({name: 'x', prefix: '/', env: noPath})).exitCode).toBe(2);
    expect(fails(() => chooseEnvironment({prefix: join(tmp.dir, 'home'), env: noPath})).message).toContain('has no conda-meta/ directory');
    expect(fails(() => chooseEnvironment({prefix: join(tmp.dir, 'nope'), env: noPath})).message).toContain('is not a directory');
    writeFileSync(join(home, '.conda', 'environments.txt'), `${env1}\n${other}\n`);
    const twice = fails(() => chooseEnvironment({name: 'ml', env: noPath}));
    expect(twice.exitCode).toBe(2);
    expect(twice.message).toContain(`2 conda environments are named ml: ${env1}, ${other}`);
  });
});
