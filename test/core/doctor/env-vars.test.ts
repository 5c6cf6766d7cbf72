import {describe, expect, test} from '@jest/globals';
import {join} from 'node:path';
import {ldLibraryPathEntries, pointerFindings} from '../../../src/core/doctor/env-vars.js';
import {inspectToolkits} from '../../../src/core/doctor/toolkit.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import type {TempDir} from '../../helpers/tmp.js';
import {installVersion, setGlobal, systemToolkit, write, type Machine, withMachine} from './machine.js';

describe('toolkit pointers: CUDA_HOME, CUDA_PATH, nvcc, /usr/local/cuda, cudaenv', () => {
  let tmp: TempDir;
  let m: Machine;
  withMachine('each', (made, dir) => ([m, tmp] = [made, dir]));

  const run = () => {
    const ctx = m.ctx();
    return pointerFindings(ctx, inspectToolkits(ctx));
  };

  test('all agreeing: no finding, facts name one toolkit', () => {
    const v = installVersion(m, '12.4.1');
    setGlobal(m, '12.4');
    m.env = {...m.env, CUDA_HOME: v, CUDA_PATH: v, PATH: `${join(v, 'bin')}:${m.env.PATH}`};
    const r = run();
    expect(r.findings).toEqual([]);
    expect(new Set(r.pointers.map((p) => p.toolkit))).toEqual(new Set([v]));
    expect(r.pointers.map((p) => p.name)).toEqual(['cudaenv', 'CUDA_HOME', 'CUDA_PATH', 'nvcc']);
  });

  test('each pointer at another toolkit is flagged with the command that aligns it', () => {
    installVersion(m, '12.4.1');
    setGlobal(m, '12.4');
    const other = makeFakeToolkit(join(tmp.dir, 'opt/cuda-11.8'), {version: '11.8.0'});
    systemToolkit(m, '12.1.1', true);
    m.env = {...m.env, CUDA_HOME: other, PATH: `${join(other, 'bin')}:${m.env.PATH}`, CUDA_PATH: join(tmp.dir, 'gone')};
    const {findings} = run();
    const byId = Object.fromEntries(findings.map((f) => [f.id, f]));
    expect(Object.keys(byId).sort()).toEqual(['env.cuda-home-differs', 'env.cuda-path-missing', 'env.nvcc-differs', 'env.usr-local-cuda-differs']);
    expect(byId['env.cuda-home-differs']!.evidence.join('\n')).toContain('CUDA 11.8.0');
    expect(byId['env.cuda-home-differs']!.fix).toContain('cudaenv use 12.4.1');
    expect(byId['env.usr-local-cuda-differs']!.evidence.join('\n')).toContain('CUDA 12.1.1');
    expect(byId['env.usr-local-cuda-differs']!.fix).toContain('sudo cudaenv link 12.4.1');
  });

  test('without cudaenv, nvcc on PATH is the reference', () => {
    const a = makeFakeToolkit(join(tmp.dir, 'a'), {version: '12.2.2'});
    const b = makeFakeToolkit(join(tmp.dir, 'b'), {version: '12.6.3'});
    m.env = {...m.env, PATH: `${join(a, 'bin')}:${m.env.PATH}`, CUDA_HOME: b};
    const {findings} = run();
    expect(findings.map((f) => f.id)).toEqual(['env.cuda-home-differs']);
    expect(findings[0]!.fix).toBe(`export CUDA_HOME=${a}`);
  });
});

describe('LD_LIBRARY_PATH entries', () => {
  let tmp: TempDir;
  let m: Machine;
  withMachine('each', (made, dir) => ([m, tmp] = [made, dir]));

  test('entries with CUDA libraries, their toolkit, and an empty entry', () => {
    const tk = makeFakeToolkit(join(tmp.dir, 'cuda-12.3'), {version: '12.3.2'});
    const plain = join(tmp.dir, 'plain');
    write(join(plain, 'libfoo.so.1'), 'x');
    const wheel = join(tmp.dir, 'nvidia/cublas/lib');
    write(join(wheel, 'libcublas.so.12'), 'x');
    m.env = {...m.env, LD_LIBRARY_PATH: `${plain}:${join(tk, 'lib64')}::${wheel}`};
    const r = ldLibraryPathEntries(m.ctx());
    expect(r.entries).toEqual([
      {entry: join(tk, 'lib64'), index: 1, cudaLibraries: ['libcudart.so', 'libcudart.so.12', 'libcudart.so.12.3.127'], toolkit: tk, toolkitVersion: '12.3.2'},
      {entry: wheel, index: 3, cudaLibraries: ['libcublas.so.12'], toolkit: null, toolkitVersion: null},
    ]);
    expect(r.findings).toHaveLength(1);
    expect(r.findings[0]).toMatchObject({id: 'env.ld-library-path-empty-entry', severity: 'warning'});
    expect(r.findings[0]!.fix).toBe(`export LD_LIBRARY_PATH=${plain}:${join(tk, 'lib64')}:${wheel}`);
  });
});
