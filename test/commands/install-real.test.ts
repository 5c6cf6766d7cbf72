import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawn, spawnSync} from 'node:child_process';
import {existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, cliEnv} from '../helpers/cli.js';
import {startMirrorServer, type MirrorServer} from '../helpers/mirror.js';
import {writeRealMirror, type Served} from '../helpers/real-mirror.js';
import {testIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';

/**
 * End to end against NVIDIA's real manifests (test/fixtures/redist-manifests), served from
 * loopback with only sha256 and size rewritten for stand-in archives in NVIDIA's layout.
 */

let tmp: {dir: string; cleanup: () => void};
const servers: MirrorServer[] = [];
let cuda: MirrorServer;
/** Both cuDNN 8.9.7 manifests (variant-style and per-CUDA-major) and 9.14.0. */
let cudnnBoth: MirrorServer;
/** Only the per-CUDA-major redistrib_8.9.7.29.json. */
let cudnnPerMajor: MirrorServer;
let n = 0;

const HAVE_PKG_CONFIG = spawnSync('pkg-config', ['--version']).status === 0;
const HAVE_LDD = spawnSync('ldd', ['--version']).status === 0;

const minimal = (release: string): Served[] => [
  {component: 'cuda_nvcc'}, {component: 'cuda_cudart'}, {component: 'cuda_cccl'},
  ...(Number(release.split('.')[0]) >= 13 ? [{component: 'cuda_crt'}, {component: 'libnvvm'}] : []),
];

function newStore(): string {
  return join(tmp.dir, `store${n++}`);
}

function env(store: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return cliEnv(store, {CUDAENV_MIRROR: cuda.url, CUDAENV_CUDNN_MIRROR: cudnnBoth.url, CUDAENV_RETRY_DELAY_MS: '20', PKG_CONFIG_PATH: '', PKG_CONFIG_LIBDIR: '', ...extra});
}

/** Runs the built CLI without blocking this process (the loopback mirrors answer from here). */
async function runCli(args: string[], e: NodeJS.ProcessEnv): Promise<{status: number; stdout: string; stderr: string}> {
  const child = spawn(process.execPath, [CLI, ...args], {env: e, stdio: ['ignore', 'pipe', 'pipe']});
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return {status: code ?? 128, stdout, stderr};
}

beforeAll(async () => {
  tmp = makeTempDir('cudaenv-install-real-');
  const work = join(tmp.dir, 'work');
  writeRealMirror(join(tmp.dir, 'cuda'), 'cuda', [
    {label: '11.8.0', serve: [...minimal('11.8.0'), {component: 'libcublas'}, {component: 'cuda_nvrtc'}]},
    {label: '12.4.1', serve: [...minimal('12.4.1'), {component: 'libcublas'}, {component: 'cuda_nvrtc'}, {component: 'nvidia_driver'}]},
    {label: '13.0.2', serve: minimal('13.0.2')},
  ], work);
  writeRealMirror(join(tmp.dir, 'cudnn-both'), 'cudnn', [
    {label: '8.9.7', serve: [{component: 'cudnn', variant: 'cuda11'}, {component: 'cudnn', variant: 'cuda12'}]},
    {label: '8.9.7.29', serve: [{component: 'cudnn'}]},
    {label: '9.14.0', serve: [{component: 'cudnn', variant: 'cuda12'}]},
  ], work);
  writeRealMirror(join(tmp.dir, 'cudnn-per-major'), 'cudnn', [{label: '8.9.7.29', serve: [{component: 'cudnn'}]}], work);
  cuda = await startMirrorServer(join(tmp.dir, 'cuda'));
  cudnnBoth = await startMirrorServer(join(tmp.dir, 'cudnn-both'));
  cudnnPerMajor = await startMirrorServer(join(tmp.dir, 'cudnn-per-major'));
  servers.push(cuda, cudnnBoth, cudnnPerMajor);
}, 180000);

afterAll(async () => {
  for (const s of servers) await s.close();
  tmp?.cleanup();
});

describe('install from a mirror of NVIDIA\'s real manifests', () => {
  test('CUDA 11.8.0 (manifest without release_label) installs, records its date, and nvcc builds a program', async () => {
    const store = newStore();
    const r = await runCli(['install', '11.8', '--profile', 'minimal', '--json'], env(store));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({version: '11.8.0', status: 'installed', platform: 'linux-x86_64', platform_why: 'this machine is x86_64'});
    const dir = join(store, 'versions', '11.8.0');
    const receipt = JSON.parse(readFileSync(join(dir, '.cudaenv-receipt.json'), 'utf8'));
    expect(receipt).toMatchObject({release: '11.8.0', release_date: '2022-10-03', platform: 'linux-x86_64'});
    expect(receipt.components.map((c: {name: string; version: string}) => `${c.name} ${c.version}`)).toEqual(['cuda_cccl 11.8.89', 'cuda_cudart 11.8.89', 'cuda_nvcc 11.8.89']);
    // NVIDIA's layout merged: nvvm/ from cuda_nvcc, lib/ -> lib64/, one LICENSE per component
    expect(existsSync(join(dir, 'nvvm', 'libdevice', 'libdevice.10.bc'))).toBe(true);
    expect(readlinkSync(join(dir, 'lib64', 'libcudart.so.11.0'))).toBe('libcudart.so.11.8.89');
    expect(readdirSync(join(dir, 'licenses')).sort()).toEqual(['cuda_cccl', 'cuda_cudart', 'cuda_nvcc']);
    expect(existsSync(join(dir, 'pkg-config'))).toBe(false);
    const src = join(tmp.dir, `v${n++}.c`);
    writeFileSync(src, '#include <cuda_runtime.h>\n#include <stdio.h>\nint main(void) { int v = 0; cudaRuntimeGetVersion(&v); printf("%d\\n", v); return 0; }\n');
    const out = join(tmp.dir, `v${n++}`);
    const cc = spawnSync(join(dir, 'bin', 'nvcc'), [src, '-o', out], {encoding: 'utf8'});
    expect(cc.stderr).toBe('');
    expect(spawnSync(out, [], {encoding: 'utf8', env: {...process.env, LD_LIBRARY_PATH: join(dir, 'lib64')}}).stdout).toBe('11080\n');
  });

  testIf(HAVE_PKG_CONFIG, 'needs pkg-config (apt-get install pkg-config)')('pkg-config finds the toolkit\'s .pc files in lib64/pkgconfig, rooted at the installed path, and a program builds with them', async () => {
    const store = newStore();
    expect((await runCli(['install', '12.4.1', '--components', 'cuda_cudart,libcublas,cuda_nvrtc'], env(store))).status).toBe(0);
    const dir = join(store, 'versions', '12.4.1');
    expect(existsSync(join(dir, 'pkg-config'))).toBe(false);
    expect(readdirSync(join(dir, 'lib64', 'pkgconfig')).sort()).toEqual(['cublas-12.4.pc', 'cublas.pc', 'cudart-12.4.pc', 'cudart.pc', 'nvrtc-12.4.pc', 'nvrtc.pc']);
    expect(readFileSync(join(dir, 'lib64', 'pkgconfig', 'cudart-12.4.pc'), 'utf8')).toMatch(new RegExp(`^cudaroot=${dir}$`, 'm'));
    const pcEnv = {...process.env, PKG_CONFIG_PATH: join(dir, 'lib64', 'pkgconfig'), PKG_CONFIG_LIBDIR: ''};
    const flags = spawnSync('pkg-config', ['--cflags', '--libs', 'cudart-12.4'], {encoding: 'utf8', env: pcEnv});
    expect(flags.stderr).toBe('');
    expect(flags.stdout.trim()).toBe(`-I${dir}/include -L${dir}/lib64 -lcudart`);
    expect(spawnSync('pkg-config', ['--libs', 'cublas', 'nvrtc'], {encoding: 'utf8', env: pcEnv}).stdout.trim()).toBe(`-L${dir}/lib64 -lcublas -lnvrtc`);
    // the flags really build and run a program against the installed cudart
    const src = join(tmp.dir, `pc${n++}.c`);
    writeFileSync(src, '#include <cuda_runtime.h>\n#include <stdio.h>\nint main(void) { int v = 0; cudaRuntimeGetVersion(&v); printf("%d\\n", v); return 0; }\n');
    const out = join(tmp.dir, `pc${n++}`);
    const cc = spawnSync('sh', ['-c', `gcc "$1" -o "$2" $(pkg-config --cflags --libs cudart)`, 'sh', src, out], {encoding: 'utf8', env: pcEnv});
    expect(cc.stderr).toBe('');
    expect(spawnSync(out, [], {encoding: 'utf8', env: {...process.env, LD_LIBRARY_PATH: join(dir, 'lib64')}}).stdout).toBe('12040\n');
  });

  test('CUDA 13.0.2: NVVM comes from libnvvm and the crt headers from cuda_crt', async () => {
    const store = newStore();
    const r = await runCli(['install', '13', '--profile', 'minimal', '--json'], env(store));
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).components.map((c: {name: string}) => c.name).sort()).toEqual(['cuda_cccl', 'cuda_crt', 'cuda_cudart', 'cuda_nvcc', 'libnvvm']);
    const dir = join(store, 'versions', '13.0.2');
    expect(existsSync(join(dir, 'nvvm', 'bin', 'cicc'))).toBe(true);
    expect(existsSync(join(dir, 'include', 'crt', 'host_config.h'))).toBe(true);
    expect(existsSync(join(dir, 'licenses', 'libnvvm', 'LICENSE'))).toBe(true);
  });

  test('--components nvidia_driver is refused with the reason; --allow-driver-components lets it in; cuda_compat names its platforms', async () => {
    const store = newStore();
    const r = await runCli(['install', '12.4.1', '--components', 'cuda_cudart,nvidia_driver'], env(store));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('cudaenv: nvidia_driver is not part of a CUDA toolkit: the NVIDIA driver (kernel modules and libcuda) belongs to the machine, not to a toolkit');
    expect(r.stderr).toContain('--allow-driver-components');
    expect(existsSync(join(store, 'versions', '12.4.1'))).toBe(false);
    const compat = await runCli(['install', '12.4.1', '--components', 'cuda_compat'], env(store));
    expect(compat.status).toBe(2);
    expect(compat.stderr).toContain('it exists only for linux-aarch64');
    const ok = await runCli(['install', '12.4.1', '--components', 'cuda_cudart,nvidia_driver', '--allow-driver-components', '--json'], env(store));
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout).components.map((c: {name: string}) => c.name).sort()).toEqual(['cuda_cudart', 'nvidia_driver']);
  });

  test('--cudnn 8 prefers the variant manifest of one release; the receipt records what was really installed', async () => {
    const store = newStore();
    const r = await runCli(['install', '12.4.1', '--profile', 'minimal', '--cudnn', '8', '--json'], env(store));
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).cudnn).toBe('8.9.7.29');
    const dir = join(store, 'versions', '12.4.1');
    const receipt = JSON.parse(readFileSync(join(dir, '.cudaenv-receipt.json'), 'utf8'));
    expect(receipt.cudnn).toMatchObject({release: '8.9.7', version: '8.9.7.29', variant: 'cuda12', style: 'variant', relative_path: 'cudnn/linux-x86_64/cudnn-linux-x86_64-8.9.7.29_cuda12-archive.tar.xz'});
    expect(readFileSync(join(dir, 'include', 'cudnn.h'), 'utf8')).toContain('CUDNN_BUILT_FOR_CUDA 12');
    // CUDA 11: the per-CUDA-12 manifest is passed over; the cuda11 build of the variant manifest is taken
    const s11 = newStore();
    const r11 = await runCli(['install', '11.8.0', '--profile', 'minimal', '--cudnn', '8', '--json'], env(s11));
    expect(r11.status).toBe(0);
    const receipt11 = JSON.parse(readFileSync(join(s11, 'versions', '11.8.0', '.cudaenv-receipt.json'), 'utf8'));
    expect(receipt11.cudnn).toMatchObject({release: '8.9.7', variant: 'cuda11', style: 'variant'});
    expect(readFileSync(join(s11, 'versions', '11.8.0', 'include', 'cudnn.h'), 'utf8')).toContain('CUDNN_BUILT_FOR_CUDA 11');
  });

  test('--cudnn with only the per-CUDA-major manifest: installed for CUDA 12, refused for CUDA 11 with why', async () => {
    const store = newStore();
    const e = env(store, {CUDAENV_CUDNN_MIRROR: cudnnPerMajor.url});
    const r = await runCli(['install', '12.4.1', '--profile', 'minimal', '--cudnn', '8.9', '--json'], e);
    expect(r.status).toBe(0);
    const receipt = JSON.parse(readFileSync(join(store, 'versions', '12.4.1', '.cudaenv-receipt.json'), 'utf8'));
    expect(receipt.cudnn).toMatchObject({release: '8.9.7.29', version: '8.9.7.29', variant: 'cuda12', style: 'per-major'});
    const s11 = newStore();
    const r11 = await runCli(['install', '11.8.0', '--profile', 'minimal', '--cudnn', '8'], env(s11, {CUDAENV_CUDNN_MIRROR: cudnnPerMajor.url}));
    expect(r11.status).toBe(1);
    expect(r11.stderr).toContain(`cudaenv: the cuDNN mirror ${cudnnPerMajor.url} has no cuDNN 8 built for CUDA 11 on linux-x86_64`);
    expect(r11.stderr).toContain('8.9.7.29 (built for CUDA 12)');
    expect(existsSync(join(s11, 'versions', '11.8.0'))).toBe(false);
  });

  testIf(HAVE_LDD, 'needs ldd (glibc)')('--cudnn 9 with --profile minimal adds libcublas and cuda_nvrtc, says so, and the loader resolves libcudnn', async () => {
    const store = newStore();
    const r = await runCli(['install', '12.4.1', '--profile', 'minimal', '--cudnn', '9'], env(store));
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('Platform: linux-x86_64 (this machine is x86_64)');
    expect(r.stderr).toContain('cudaenv: note: added libcublas, cuda_nvrtc: cuDNN 9.14.0.64 loads libcublasLt and libnvrtc');
    const dir = join(store, 'versions', '12.4.1');
    const receipt = JSON.parse(readFileSync(join(dir, '.cudaenv-receipt.json'), 'utf8'));
    expect(receipt.components.map((c: {name: string}) => c.name).sort()).toEqual(['cuda_cccl', 'cuda_cudart', 'cuda_nvcc', 'cuda_nvrtc', 'libcublas']);
    expect(lstatSync(join(dir, 'lib64', 'libnvrtc.so.12')).isSymbolicLink()).toBe(true);
    const ldd = spawnSync('ldd', ['-r', join(dir, 'lib64', 'libcudnn.so.9')], {encoding: 'utf8', env: {...process.env, LD_LIBRARY_PATH: join(dir, 'lib64')}});
    expect(ldd.stdout).toContain(`libcublasLt.so.12 => ${join(dir, 'lib64', 'libcublasLt.so.12')}`);
    expect(ldd.stdout).not.toContain('not found');
  });

  test('ls-remote marks releases that cannot be installed for the platform and says why', async () => {
    const store = newStore();
    const before = cuda.log.length;
    const here = await runCli(['ls-remote', '--json'], env(store));
    expect(cuda.log.slice(before).filter((l) => l.path.startsWith('redistrib_')).length).toBe(3);
    expect(JSON.parse(here.stdout).releases).toEqual([
      {version: '11.8.0', installed: false, installable: true, platform: 'linux-x86_64'},
      {version: '12.4.1', installed: false, installable: true, platform: 'linux-x86_64'},
      {version: '13.0.2', installed: false, installable: true, platform: 'linux-x86_64'},
    ]);
    const jetson = await runCli(['ls-remote', '--arch', 'linux-aarch64'], env(store));
    expect(jetson.status).toBe(0);
    expect(jetson.stdout.split('\n')).toEqual(['  11.8.0', '  12.4.1', '! 13.0.2  (cannot be installed: it has no linux-aarch64 archives)', '']);
    // the second listing read the manifests from the store's cache (one day), only the index from the mirror
    expect(cuda.log.slice(before).filter((l) => l.path.startsWith('redistrib_')).length).toBe(3);
    expect(readdirSync(join(store, 'cache', 'manifests'))).toHaveLength(1);
    const install = await runCli(['install', '13.0.2', '--arch', 'linux-aarch64'], env(store));
    expect(install.status).toBe(1);
    expect(install.stderr).toContain('cudaenv: CUDA 13.0.2 has no linux-aarch64 archives');
    expect(install.stderr).toContain('It has linux-x86_64, linux-sbsa. From CUDA 13, Jetson Thor uses linux-sbsa.');
  });
});

describe('a broken real manifest marks its release in ls-remote, not the whole listing', () => {
  test('a manifest the mirror lists but does not serve', async () => {
    const root = join(tmp.dir, `partial${n++}`);
    writeRealMirror(root, 'cuda', [{label: '11.8.0', serve: []}]);
    // the index also lists 12.0.1, which is not there
    writeFileSync(join(root, 'index.html'), `${readFileSync(join(root, 'index.html'), 'utf8')}<a href="redistrib_12.0.1.json">redistrib_12.0.1.json</a>\n`);
    mkdirSync(join(root, 'x'), {recursive: true});
    const server = await startMirrorServer(root);
    servers.push(server);
    const r = await runCli(['ls-remote', '--json'], env(newStore(), {CUDAENV_MIRROR: server.url}));
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).releases).toEqual([
      {version: '11.8.0', installed: false, installable: true, platform: 'linux-x86_64'},
      {version: '12.0.1', installed: false, installable: false, platform: null, why: 'the mirror lists redistrib_12.0.1.json but does not serve it'},
    ]);
  });
});
