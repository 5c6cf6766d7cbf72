import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {detectToolkitVersion, wheelComponent} from '../../../src/core/versions/detect.js';
import {matchRelease, releaseTable, type FoundComponent} from '../../../src/core/versions/releases.js';
import {REPO_ROOT, cliEnv, runCli} from '../../helpers/cli.js';
import {testIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';

const MANIFESTS = join(REPO_ROOT, 'test', 'fixtures', 'redist-manifests', 'cuda');
const GEN = join(REPO_ROOT, 'scripts', 'gen-release-table.mjs');

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
});
afterEach(() => cleanup());

const found = (c: Record<string, string>): Record<string, FoundComponent> =>
  Object.fromEntries(Object.entries(c).map(([n, v]) => [n, {version: v, from: 'test'}]));

/** A pip-assembled toolkit as /usr/local/cuda-13.0 on a build machine: wheels' dist-info, no version.json. */
function pipToolkit(path: string, wheels: Record<string, string>, nvcc: string | null = null): string {
  makeFakeToolkit(path, {nvccVersion: nvcc, cudartVersion: null});
  writeFileSync(join(path, 'lib64', 'libcudart.so.13'), '');
  for (const [name, v] of Object.entries(wheels)) mkdirSync(join(path, 'dist-info', `${name}-${v}.dist-info`), {recursive: true});
  return path;
}
const PIP_13_0_2 = {
  nvidia_cuda_runtime: '13.0.96', nvidia_cuda_nvcc: '13.0.88', nvidia_cuda_cccl: '13.0.85', nvidia_cuda_crt: '13.0.88',
  nvidia_cuda_cupti: '13.0.85', nvidia_nvtx: '13.0.85', nvidia_nvvm: '13.0.88', nvidia_cudnn_cu13: '9.13.0.50',
};

describe('the release table', () => {
  test('holds every release with its component versions, labels from the file name where the manifest has none', () => {
    const t = releaseTable();
    expect(t['13.0.2']).toMatchObject({cuda_nvcc: '13.0.88', cuda_cudart: '13.0.96', libnvvm: '13.0.88'});
    expect(t['11.8.0']).toMatchObject({cuda_nvcc: '11.8.89', cuda_cudart: '11.8.89'});
    expect(t['12.4.1']!.nvidia_driver).toBeUndefined();
  });

  test('the generator writes labels from release_label or, lacking it, the file name, and refuses a label that disagrees', () => {
    const m = join(dir, 'm');
    mkdirSync(m);
    writeFileSync(join(m, 'redistrib_11.8.0.json'), JSON.stringify({release_date: '2022-10-03', cuda_nvcc: {name: 'nvcc', version: '11.8.89'}, nvidia_driver: {version: '520.61.05'}}));
    writeFileSync(join(m, 'redistrib_12.4.1.json'), JSON.stringify({release_label: '12.4.1', cuda_cudart: {version: '12.4.127'}}));
    const out = join(dir, 'releases.json');
    let r = spawnSync(process.execPath, [GEN, m, out], {encoding: 'utf8'});
    expect(r.status).toBe(0);
    expect(JSON.parse(readFileSync(out, 'utf8')).releases).toEqual({'11.8.0': {cuda_nvcc: '11.8.89'}, '12.4.1': {cuda_cudart: '12.4.127'}});
    writeFileSync(join(m, 'redistrib_12.5.0.json'), JSON.stringify({release_label: '12.5.1', cuda_cudart: {version: '12.5.82'}}));
    r = spawnSync(process.execPath, [GEN, m, out], {encoding: 'utf8'});
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('redistrib_12.5.0.json: release_label 12.5.1 disagrees with the file name');
  });

  test('the shipped table is what the generator makes from the manifests', () => {
    const out = join(dir, 'releases.json');
    expect(spawnSync(process.execPath, [GEN, MANIFESTS, out]).status).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(join(REPO_ROOT, 'src', 'core', 'versions', 'releases.json'), 'utf8'));
  });
});

describe('matchRelease', () => {
  test('exact: nvcc 13.0.88 with cudart 13.0.96 is 13.0.2, not 13.0.88 or 13.0.96', () => {
    expect(matchRelease(found({cuda_nvcc: '13.0.88', cuda_cudart: '13.0.96'}))).toMatchObject({label: '13.0.2', kind: 'exact', candidates: ['13.0.2']});
  });
  test('several: nvcc 13.0.88 alone is in 13.0.1 and 13.0.2; the newest is taken and both are named', () => {
    expect(matchRelease(found({cuda_nvcc: '13.0.88'}))).toMatchObject({label: '13.0.2', kind: 'several', candidates: ['13.0.2', '13.0.1']});
  });
  test('partial: components of two releases; the release with most of them, and which matched what', () => {
    const m = matchRelease(found({cuda_nvcc: '12.2.140', cuda_cudart: '12.2.140', cuda_cupti: '12.4.127'}))!;
    expect(m).toMatchObject({label: '12.2.2', kind: 'partial', candidates: ['12.2.2']});
    expect(m.matched).toEqual({cuda_cudart: ['12.2.2'], cuda_cupti: ['12.4.1', '12.4.0'].filter((l) => releaseTable()[l]!.cuda_cupti === '12.4.127'), cuda_nvcc: ['12.2.2']});
  });
  test('newer: a release newer than the table keeps the runtime\'s own version as its label', () => {
    expect(matchRelease(found({cuda_nvcc: '13.9.20', cuda_cudart: '13.9.21'}))).toMatchObject({label: '13.9.21', kind: 'newer', candidates: []});
    // A library that happens to match an old release does not make the toolkit that release (no guess from the last rows).
    expect(matchRelease(found({cuda_cudart: '13.9.21', libcufft: releaseTable()['13.0.2']!.libcufft!}))).toMatchObject({label: '13.9.21', kind: 'newer'});
    // With the release's row (as a mirror's manifest gives it), exact.
    expect(matchRelease(found({cuda_nvcc: '13.9.20', cuda_cudart: '13.9.21'}), {...releaseTable(), '13.9.0': {cuda_nvcc: '13.9.20', cuda_cudart: '13.9.21'}})).toMatchObject({label: '13.9.0', kind: 'exact'});
  });
  test('components no release has (cuDNN) say nothing', () => {
    expect(matchRelease(found({libcudnn: '9.13.0.50'}))).toBeUndefined();
  });
  test('wheel names map to manifest components', () => {
    expect(['nvidia_cuda_runtime_cu12', 'nvidia-cuda-nvcc-cu12', 'nvidia_nvtx', 'nvidia_nvvm', 'nvidia_cublas_cu12', 'nvidia_cuda_cupti'].map(wheelComponent))
      .toEqual(['cuda_cudart', 'cuda_nvcc', 'cuda_nvtx', 'libnvvm', 'libcublas', 'cuda_cupti']);
  });
  test('detect: a pip-assembled 13.0.2 without running nvcc (as doctor does) and with it', () => {
    const tk = pipToolkit(join(dir, 'pip'), PIP_13_0_2, '13.0.88');
    expect(detectToolkitVersion(tk, false)).toMatchObject({version: '13.0.2', source: 'components'});
    const d = detectToolkitVersion(tk, true);
    expect(d.release?.components.cuda_nvcc).toEqual({version: '13.0.88', from: 'nvcc --version'});
    expect(d.release?.components.libcudnn).toBeUndefined();
  });
});

describe('one toolkit, one name: add, ls, current, doctor', () => {
  let store: string;
  let env: NodeJS.ProcessEnv;
  beforeEach(() => {
    store = join(dir, 'store');
    env = cliEnv(store, {PATH: '/usr/bin:/bin', LD_LIBRARY_PATH: ''});
  });

  test('a pip-assembled 13.0.2 is 13.0.2 everywhere, sorts above 13.0.1 and `use 13.0.2` finds it', () => {
    const tk = pipToolkit(join(dir, 'cuda-13.0'), PIP_13_0_2, '13.0.88');
    const older = makeFakeToolkit(join(dir, 'old'), {version: '13.0.1'});
    let r = runCli(['add', tk], {env});
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`Registered CUDA 13.0.2 from ${tk}`);
    expect(runCli(['add', older], {env}).status).toBe(0);
    const ls = JSON.parse(runCli(['ls', '--json'], {env}).stdout);
    expect(ls.versions.map((v: {version: string}) => v.version)).toEqual(['13.0.1', '13.0.2']);
    r = runCli(['which', 'nvcc', '--cuda', '13.0'], {env});
    expect(r.stdout.trim()).toBe(join(store, 'versions', '13.0.2', 'bin', 'nvcc'));
    const pinned = {...env, CUDAENV_VERSION: '13.0.2'};
    expect(runCli(['current'], {env: pinned}).stdout).toMatch(/^13\.0\.2 /);
    const doctor = JSON.parse(runCli(['doctor', '--json'], {env: pinned}).stdout);
    expect(doctor.facts.activeToolkit.version).toBe('13.0.2');
    // Found through CUDA_HOME, not selected with cudaenv: still the store's name for it.
    const viaHome = JSON.parse(runCli(['doctor', '--json'], {env: {...env, CUDA_HOME: tk}}).stdout);
    expect(viaHome.facts.activeToolkit).toMatchObject({source: 'CUDA_HOME', version: '13.0.2'});
  });

  test('a toolkit registered --as is called that by doctor too', () => {
    // --as names what the files cannot tell (a runtime no release of the table has); never another release
    // than they state (issue 44: 13.0.2's components registered as 13.0.9 invented a release).
    expect(runCli(['add', pipToolkit(join(dir, 'exact'), PIP_13_0_2), '--as', '13.0.9'], {env}).status).toBe(2);
    const tk = pipToolkit(join(dir, 'cuda-13.0'), {nvidia_cuda_runtime: '13.0.99'});
    expect(runCli(['add', tk, '--as', '13.0.9'], {env}).status).toBe(0);
    const doctor = JSON.parse(runCli(['doctor', '--json'], {env: {...env, CUDA_HOME: tk}}).stdout);
    expect(doctor.facts.activeToolkit.version).toBe('13.0.9');
  });

  test('components of no single release: said, what matched shown, the toolkit registered and usable', () => {
    const tk = makeFakeToolkit(join(dir, 'mixed'), {nvccVersion: '12.2.140', cudartVersion: '12.2.127'});
    const r = runCli(['add', tk, '--json'], {env});
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({label: '12.2.2', source: 'components', release: {kind: 'partial'}});
    expect(out.warning).toBe(`the components of ${tk} match no single NVIDIA release (cuda_cudart 12.2.127 is in no release; cuda_nvcc 12.2.140 is in 12.2.2): taken as 12.2.2, the release that has most of them; name it yourself: cudaenv add ${tk} --as VERSION`);
    const human = runCli(['add', makeFakeToolkit(join(dir, 'mixed2'), {nvccVersion: '12.3.107', cudartVersion: '12.3.999'})], {env});
    expect(human.stderr).toContain('cudaenv: warning: the components of');
    expect(human.stderr).toContain('cuda_nvcc 12.3.107 is in 12.3.2');
    const exec = runCli(['exec', '--cuda', '12.2.2', '--', 'nvcc', '--version'], {env});
    expect(exec.stdout).toContain('V12.2.140');
  });

  test('a release newer than the table: registered under the runtime\'s version, with the warning', () => {
    const tk = makeFakeToolkit(join(dir, 'future'), {nvccVersion: '13.9.20', cudartVersion: '13.9.21'});
    // The mirror that would name it is unreachable (test/commands/install-later.test.ts reads one).
    const r = runCli(['add', tk], {env: {...env, CUDAENV_MIRROR: 'http://127.0.0.1:1/', CUDAENV_RETRY_DELAY_MS: '1'}});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`Registered CUDA 13.9.21 from ${tk}`);
    expect(r.stderr).toMatch(/are newer than every release in cudaenv's release table \(11\.4\.2 to \d+\.\d+\.\d+\), and the mirror http:\/\/127\.0\.0\.1:1\/ could not be read/);
  });

  const real = '/usr/local/cuda-13.0';
  testIf(existsSync(join(real, 'bin', 'nvcc')) && existsSync(join(real, 'dist-info')), `needs the pip-assembled CUDA 13.0.2 at ${real}`)('the machine\'s pip-assembled toolkit is 13.0.2 in add, ls and doctor', () => {
    const r = runCli(['add', real, '--json'], {env});
    expect(JSON.parse(r.stdout)).toMatchObject({label: '13.0.2', release: {kind: 'exact'}});
    const doctor = JSON.parse(runCli(['doctor', '--json'], {env: {...env, CUDA_HOME: real}}).stdout);
    expect(doctor.facts.activeToolkit.version).toBe('13.0.2');
  });
});
