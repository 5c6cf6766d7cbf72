import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {existsSync, mkdirSync, readlinkSync, realpathSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {testIf} from '../helpers/skip.js';
import {NEEDS} from '../helpers/capabilities.js';

let dir: string;
let cleanup: () => void;
let store: string;
let env: NodeJS.ProcessEnv;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
  store = join(dir, 'store');
  env = cliEnv(store);
});
afterEach(() => cleanup());

describe('cudaenv add', () => {
  test.each([
    ['version.json', {version: '12.4.1'}, '12.4.1', 'version from version.json'],
    ['nvcc --version and libcudart', {nvccVersion: '12.2.140', cudartVersion: '12.2.140'}, '12.2.2', 'the NVIDIA release whose components it has: cuda_cudart 12.2.140, cuda_nvcc 12.2.140'],
    ['the libcudart file name', {nvccVersion: null, cudartVersion: '11.8.89'}, '11.8.0', 'the NVIDIA release whose components it has: cuda_cudart 11.8.89'],
  ])('names the release from %s and says how', (_source, options, label, how) => {
    const tk = makeFakeToolkit(join(dir, 'cuda'), options);
    const r = runCli(['add', tk], {env});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`Registered CUDA ${label} from ${tk} (${how}).`);
    expect(readlinkSync(join(store, 'versions', label))).toBe(tk);
    const ls = JSON.parse(runCli(['ls', '--json'], {env}).stdout);
    expect(ls.versions).toEqual([{version: label, kind: 'registered', path: join(store, 'versions', label), target: tk, broken: false, active: false, store, site: false}]);
  });

  test('version.txt of old toolkits', () => {
    const tk = makeFakeToolkit(join(dir, 'cuda-11.0'), {nvccVersion: null, cudartVersion: '11.0'});
    writeFileSync(join(tk, 'version.txt'), 'CUDA Version 11.0.228\n');
    const r = runCli(['add', tk, '--json'], {env});
    expect(JSON.parse(r.stdout)).toMatchObject({label: '11.0.228', source: 'version.txt'});
  });

  test('refuses a directory that is not a toolkit, with the reason', () => {
    mkdirSync(join(dir, 'empty'));
    const r = runCli(['add', join(dir, 'empty')], {env});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${join(dir, 'empty')} is not a CUDA toolkit: it has no bin/nvcc`);
    expect(existsSync(join(store, 'versions'))).toBe(false);
  });

  test('asks for --as when the version cannot be told, and --as works', () => {
    const tk = makeFakeToolkit(join(dir, 'pip'), {nvccVersion: null, cudartVersion: null});
    writeFileSync(join(tk, 'lib64', 'libcudart.so.12'), '');
    let r = runCli(['add', tk], {env});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cannot tell which CUDA version ${tk} holds`);
    expect(r.stderr).toContain(`cudaenv add ${tk} --as 12.4.1`);
    r = runCli(['add', tk, '--as', '12.4.1'], {env});
    expect(r.status).toBe(0);
    r = runCli(['add', tk, '--as', '12.4'], {env});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--as "12.4" is not a version label');
  });

  test('the command a hint suggests quotes the path (spaces, quotes, $(...))', () => {
    const tk = makeFakeToolkit(join(dir, "it's $(touch pwned) x"), {nvccVersion: null, cudartVersion: null});
    writeFileSync(join(tk, 'lib64', 'libcudart.so.12'), '');
    const r = runCli(['add', tk], {env});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`Name it yourself: cudaenv add '${dir}/it'\\''s $(touch pwned) x' --as 12.4.1`);
  });

  test('a second toolkit with the same label is refused; the same one again is a no-op', () => {
    const a = makeFakeToolkit(join(dir, 'a'), {version: '12.4.1'});
    const b = makeFakeToolkit(join(dir, 'b'), {version: '12.4.1'});
    expect(runCli(['add', a], {env}).status).toBe(0);
    expect(runCli(['add', a], {env}).status).toBe(0);
    const r = runCli(['add', b], {env});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`CUDA 12.4.1 is already in the store (registered from ${a})`);
    // No invented release is offered (issue 44: it suggested --as 12.4.2, a release that does not
    // exist); a suffixed label, which only its exact name selects, is.
    expect(r.stderr).toContain(`Use the one it has, replace it (cudaenv uninstall 12.4.1 && cudaenv add ${b}), or keep both, this one under a label that is no release (cudaenv add ${b} --as 12.4.1-local).`);
    expect(r.stderr).not.toContain('--as 12.4.2');
    // --as cannot name it another release than its files state.
    const forced = runCli(['add', b, '--as', '12.4.2'], {env});
    expect(forced.status).toBe(2);
    expect(forced.stderr).toContain(`--as 12.4.2: ${b} is CUDA 12.4.1 (its version.json says so), not 12.4.2`);
    expect(forced.stderr).toContain(`or keep both, this one under a label (cudaenv add ${b} --as 12.4.1-local)`);
    expect(existsSync(join(store, 'versions', '12.4.2'))).toBe(false);
    expect(readlinkSync(join(store, 'versions', '12.4.1'))).toBe(a);
  });

  test('a second toolkit of a release is registered under a suffixed label, which only its exact name selects', () => {
    const a = makeFakeToolkit(join(dir, 'a'), {version: '12.4.1'});
    const b = makeFakeToolkit(join(dir, 'b'), {version: '12.4.1'});
    expect(runCli(['add', a], {env}).status).toBe(0);
    const r = runCli(['add', b, '--as', '12.4.1-local'], {env});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(readlinkSync(join(store, 'versions', '12.4.1-local'))).toBe(b);
    const ls = JSON.parse(runCli(['ls', '--json'], {env}).stdout);
    expect(ls.versions.map((v: {version: string; target: string}) => [v.version, v.target])).toEqual([['12.4.1', a], ['12.4.1-local', b]]);
    expect(runCli(['ls'], {env}).stdout).toContain('12.4.1-local');
    // Partial and full release specs and latest select the release, never the label.
    for (const spec of ['12', '12.4', '12.4.1', 'latest']) {
      const cur = runCli(['current'], {env: {...env, CUDAENV_VERSION: spec}});
      expect([spec, cur.stdout.trim().split(/\s/)[0]]).toEqual([spec, '12.4.1']);
      expect(runCli(['which', 'nvcc', '--cuda', spec], {env}).stdout.trim()).toBe(join(store, 'versions', '12.4.1', 'bin', 'nvcc'));
    }
    const cur = runCli(['current'], {env: {...env, CUDAENV_VERSION: '12.4.1-local'}});
    expect(cur.stdout.trim().split(/\s/)[0]).toBe('12.4.1-local');
    const which = runCli(['which', 'nvcc'], {env: {...env, CUDAENV_VERSION: '12.4.1-local'}});
    expect(which.stdout.trim()).toBe(join(store, 'versions', '12.4.1-local', 'bin', 'nvcc'));
    // A .cuda-version may hold it.
    const project = join(dir, 'project');
    mkdirSync(project);
    writeFileSync(join(project, '.cuda-version'), '12.4.1-local\n');
    const fromFile = runCli(['which', 'nvcc'], {env, cwd: project});
    expect(fromFile.stderr).toBe('');
    expect(fromFile.stdout.trim()).toBe(join(store, 'versions', '12.4.1-local', 'bin', 'nvcc'));
    // The resolve index has the label's own link only: no major, minor or latest key points at it.
    expect(readlinkSync(join(store, 'resolve', '12.4.1-local'))).toBe(join('..', 'versions', '12.4.1-local'));
    for (const key of ['12', '12.4', '12.4.1', 'latest']) expect(readlinkSync(join(store, 'resolve', key))).toBe(join('..', 'versions', '12.4.1'));
    // And it can be removed by its label.
    expect(runCli(['uninstall', '12.4.1-local'], {env}).status).toBe(0);
    expect(existsSync(join(store, 'versions', '12.4.1-local'))).toBe(false);
    expect(readlinkSync(join(store, 'versions', '12.4.1'))).toBe(a);
  });

  test('--as with a suffix keeps the toolkit\'s release, and refuses what is no label', () => {
    const b = makeFakeToolkit(join(dir, 'b'), {version: '12.4.1'});
    const other = runCli(['add', b, '--as', '12.4.2-local'], {env});
    expect(other.status).toBe(2);
    expect(other.stderr).toContain(`--as 12.4.2-local: ${b} is CUDA 12.4.1 (its version.json says so), not 12.4.2-local`);
    for (const bad of ['12.4.1-Local', '12.4.1-', '12.4.1-a/b', '12.4.1-../x', '12.4.1-1a', '12.4.1-local-x', '12.4-local', `12.4.1-${'a'.repeat(17)}`, '12.4.1-a\nb']) {
      const r = runCli(['add', b, '--as', bad], {env});
      expect([bad, r.status]).toEqual([bad, 2]);
      expect(r.stderr).toContain(`--as ${JSON.stringify(bad)} is not a version label`);
    }
    expect(runCli(['ls', '--json'], {env}).stdout).not.toContain(b);
  });

  const real = '/usr/local/cuda-13.0';
  testIf(existsSync(join(real, 'bin', 'nvcc')), NEEDS.devToolkit(real))('the issue\'s case: the real pip-assembled 13.0.2 cannot be registered as 13.0.3', () => {
    const r = runCli(['add', real, '--as', '13.0.3'], {env});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--as 13.0.3: ${real} is CUDA 13.0.2 (its components are that release's), not 13.0.3`);
    expect(existsSync(join(store, 'versions', '13.0.3'))).toBe(false);
  });

  testIf(existsSync(join(real, 'bin', 'nvcc')), NEEDS.devToolkit(real))('registers the machine\'s real toolkit (/usr/local/cuda-13.0)', () => {
    const r = runCli(['add', real, '--json'], {env});
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.source).toBe('components');
    // A pip-assembled 13.0.2: nvcc says 13.0.88, the runtime wheel 13.0.96; the release is 13.0.2.
    expect(out.label).toBe('13.0.2');
    expect(out.release.kind).toBe('exact');
    const which = runCli(['which', 'nvcc', '--cuda', '13'], {env});
    expect(which.stdout.trim()).toBe(join(store, 'versions', out.label, 'bin', 'nvcc'));
  });
});

describe('cudaenv ls', () => {
  test('marks the active version and says where the choice came from', () => {
    for (const v of ['11.8.0', '12.4.1']) runCli(['add', makeFakeToolkit(join(dir, v), {version: v})], {env});
    writeFileSync(join(dir, '.cuda-version'), '11\n');
    const r = runCli(['ls'], {env, cwd: dir});
    expect(r.stdout).toMatch(/^\* 11\.8\.0 /m);
    expect(r.stdout).toMatch(/^ {2}12\.4\.1 /m);
    expect(r.stdout).toContain(`active: 11.8.0 (set by ${join(dir, '.cuda-version')})`);
  });

  test('a registered toolkit that has gone is shown as missing', () => {
    const tk = makeFakeToolkit(join(dir, 'tk'), {version: '12.4.1'});
    runCli(['add', tk], {env});
    rmSync(tk, {recursive: true});
    expect(runCli(['ls'], {env}).stdout).toContain(`12.4.1     -> ${tk} (missing!)`);
  });

  test('--system lists toolkits with the command that registers them', () => {
    const r = runCli(['ls', '--system', '--json'], {env});
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(Array.isArray(out.system)).toBe(true);
    for (const s of out.system) expect(s.command === null || s.command.startsWith(`cudaenv add ${s.path}`)).toBe(true);
    // /usr/local/cuda and the directory it links to are one toolkit, listed once.
    const reals = out.system.map((s: {path: string}) => realpathSync(s.path));
    expect(new Set(reals).size).toBe(reals.length);
  });

  test('a path that does not exist is named as such, not as a raw ENOENT', () => {
    const r = runCli(['add', join(dir, 'nonexistent')], {env});
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`cudaenv: ${join(dir, 'nonexistent')} does not exist\nGive an existing toolkit directory, for example /usr/local/cuda-12.2 (\`cudaenv ls --system\` lists the ones this machine has).\n`);
  });
});

describe('cudaenv add, pip-assembled toolkits', () => {
  test('names the release from the wheels\' metadata in dist-info/', () => {
    const tk = makeFakeToolkit(join(dir, 'pipkit'), {nvccVersion: null, cudartVersion: null});
    writeFileSync(join(tk, 'lib64', 'libcudart.so.12'), '');
    mkdirSync(join(tk, 'dist-info', 'nvidia_cuda_runtime_cu12-12.4.127.dist-info'), {recursive: true});
    mkdirSync(join(tk, 'dist-info', 'nvidia_cuda_nvcc_cu12-12.4.131.dist-info'), {recursive: true});
    const r = runCli(['add', tk, '--json'], {env});
    expect(JSON.parse(r.stdout)).toMatchObject({label: '12.4.1', source: 'components', release: {kind: 'exact', candidates: ['12.4.1']}});
  });
});

describe('cudaenv add, not toolkits', () => {
  test('a prefix holding only an nvcc wrapper (like /usr/local/bin/nvcc) is not a toolkit', () => {
    const prefix = join(dir, 'usr-local');
    mkdirSync(join(prefix, 'bin'), {recursive: true});
    writeFileSync(join(prefix, 'bin', 'nvcc'), '#!/bin/sh\nexec /usr/local/cuda-13.0/bin/nvcc "$@"\n', {mode: 0o755});
    const r = runCli(['add', prefix], {env});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${prefix} is not a CUDA toolkit`);
  });
});
