import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync, spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {cliEnv, runCli} from '../helpers/cli.js';
import {realisticRelease, startMirrorServer, type ComponentSpec, type MirrorServer} from '../helpers/mirror.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {startCacheServer} from './cache-server.js';
import {copyRealManifests, writeIndex, writeRealRelease, type Served} from './real-mirror.js';
import {ACTION, BUNDLE, makeRunner, parseCommandFile, runAction, type RunResult, type Runner} from './run-action.js';

const haveTools = ['gcc', 'xz', 'tar'].every((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status === 0);
const ready = haveTools && existsSync(BUNDLE);
const why = !haveTools ? 'needs gcc, xz and tar' : 'needs dist-action/index.mjs (npm run build:action)';

describe('action.yml', () => {
  test('declares the inputs and outputs the issue names, on node24, with the bundle as main', () => {
    expect(Object.keys(ACTION.inputs).sort()).toEqual(['cache', 'check', 'components', 'cuda', 'cudnn', 'cudnn-mirror', 'ld-library-path', 'mirror', 'profile']);
    expect(ACTION.inputs.cache!.default).toBe('true');
    expect(ACTION.inputs.check!.default).toBe('true');
    expect(ACTION.inputs['ld-library-path']!.default).toBe('prepend');
    expect(Object.keys(ACTION.outputs)).toEqual(expect.arrayContaining(['version', 'cuda-path']));
    expect(ACTION.runs).toEqual({using: 'node24', main: 'dist-action/index.mjs'});
  });
});

describeIf(ready, why)('the bundled action against a loopback mirror of the real 12.4.1 manifest', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let server: MirrorServer;
  let served: Served[];
  let cudnnServer: MirrorServer;
  let cudnnServed: Served[];
  const archives = (s: Served[]): string[] => s.map((x) => x.relativePath);

  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-action-');
    const root = join(tmp.dir, 'mirror');
    const work = join(tmp.dir, 'work');
    const release = realisticRelease(work, '12.4.1');
    const standIns = release.components.filter((c) => ['cuda_nvcc', 'cuda_cudart', 'cuda_cccl'].includes(c.name));
    // libcublas.so.12 needs libcublasLt.so.12, which its stand-in archive lacks: a toolkit whose check fails.
    mkdirSync(work, {recursive: true});
    writeFileSync(join(work, 'lt.c'), 'int cublasLtCreate(void **h) { *h = 0; return 0; }\n');
    writeFileSync(join(work, 'cublas.c'), 'int cublasLtCreate(void **h);\nint cublasCreate_v2(void **h) { return cublasLtCreate(h); }\n');
    execFileSync('gcc', ['-shared', '-fPIC', '-Wl,-soname,libcublasLt.so.12', '-o', join(work, 'libcublasLt.so.12'), join(work, 'lt.c')]);
    execFileSync('gcc', ['-shared', '-fPIC', '-Wl,-soname,libcublas.so.12', '-o', join(work, 'libcublas.so.12'), join(work, 'cublas.c'), join(work, 'libcublasLt.so.12')]);
    standIns.push({name: 'libcublas', version: '12.4.5.8', files: {
      'LICENSE': 'cublas license\n', 'lib/libcublas.so.12.4.5.8': {bytes: readFileSync(join(work, 'libcublas.so.12'))}, 'lib/libcublas.so.12': {symlink: 'libcublas.so.12.4.5.8'},
    }});
    // cuDNN loads libnvrtc: a step with cudnn installs cuda_nvrtc too.
    standIns.push({name: 'cuda_nvrtc', version: '12.4.127', files: {'LICENSE': 'nvrtc license\n', 'include/nvrtc.h': '#define NVRTC 1\n'}});
    served = writeRealRelease(root, 'cuda', '12.4.1', standIns, work);
    copyRealManifests(root, 'cuda', ['12.3.2', '12.4.0']);
    writeIndex(root, ['12.3.2', '12.4.0', '12.4.1']);
    server = await startMirrorServer(root);

    const cudnnRoot = join(tmp.dir, 'cudnn-mirror');
    const cudnn: ComponentSpec = {name: 'cudnn', version: '9.1.0.70', variant: 'cuda12', files: {
      'LICENSE': 'cudnn license\n', 'include/cudnn.h': '#define CUDNN_MAJOR 9\n', 'lib/libcudnn.so.9': {bytes: Buffer.from('not a real cudnn\n')},
    }};
    cudnnServed = writeRealRelease(cudnnRoot, 'cudnn', '9.1.0', [cudnn], work);
    copyRealManifests(cudnnRoot, 'cudnn', ['9.0.0']);
    writeIndex(cudnnRoot, ['9.0.0', '9.1.0']);
    cudnnServer = await startMirrorServer(cudnnRoot);
  });

  afterAll(async () => {
    await server?.close();
    await cudnnServer?.close();
    tmp?.cleanup();
  });

  const sizeOf = (names: string[]): number => served.filter((s) => names.includes(s.name)).reduce((n, s) => n + s.size, 0);
  const requests = (from: number): string[] => server.log.slice(from).map((r) => r.path);

  function expectExports(r: RunResult, dir: string, ld: string | undefined): void {
    expect(r.files.path).toBe(`${join(dir, 'bin')}\n`);
    const env = parseCommandFile(r.files.env);
    // The tool cache's store is a site store of the later steps (issue 45): dir is <toolcache>/cudaenv/versions/LABEL.
    const want = new Map([['CUDA_HOME', dir], ['CUDA_PATH', dir], ['CUDAENV_SITE_DIRS', dirname(dirname(dir))]]);
    if (ld !== undefined) want.set('LD_LIBRARY_PATH', ld);
    expect(env).toEqual(want);
  }

  describe('one runner: a cold run, then the same tool cache, then the Actions cache on a fresh runner', () => {
    let runner: Runner;
    let cacheDir: string;
    let dir: string;
    const inputs = {cuda: '12.4.1', components: 'nvcc,cudart'};

    beforeAll(() => {
      runner = makeRunner(join(tmp.dir, 'runner-a'));
      cacheDir = join(tmp.dir, 'actions-cache');
      mkdirSync(cacheDir);
      dir = join(runner.toolCache, 'cudaenv', 'versions', '12.4.1');
    });

    test('a cold run downloads exactly the two archives and writes PATH, env, outputs and the summary', async () => {
      const before = server.log.length;
      const r = await runAction(runner, {...inputs, mirror: server.url}, {CUDAENV_ACTION_CACHE_DIR: cacheDir, LD_LIBRARY_PATH: '/opt/other/lib'});
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      // Exact spec: the manifest itself, no index page; then only the chosen archives.
      expect(requests(before).sort()).toEqual(['redistrib_12.4.1.json', ...archives(served.filter((s) => ['cuda_nvcc', 'cuda_cudart'].includes(s.name)))].sort());
      const lib = join(dir, 'lib64');
      expectExports(r, dir, `${lib}:/opt/other/lib`);
      expect(parseCommandFile(r.files.output)).toEqual(new Map([['version', '12.4.1'], ['cuda-path', dir], ['cache-hit', 'false']]));
      expect(r.files.state).toBe('');
      // The toolkit: exactly nvcc and cudart (no cccl, no cublas), and nvcc works from the exported PATH.
      expect(readdirSync(lib).sort()).toEqual(['libcudart.so', 'libcudart.so.12', 'libcudart.so.12.4.127', 'stubs']);
      expect(execFileSync(join(dir, 'bin', 'nvcc'), ['--version'], {encoding: 'utf8'})).toContain('release 12.4');
      const bytes = sizeOf(['cuda_nvcc', 'cuda_cudart']);
      expect(r.files.summary).toContain('CUDA 12.4.1');
      expect(r.files.summary).toContain(`Bytes downloaded: ${bytes} `);
      expect(r.files.summary).toMatch(/<td>cuda_nvcc<\/td><td>12\.4\.131<\/td><td>[^<]+<\/td><td>mirror<\/td>/);
      expect(r.files.summary).toContain('OK: cudaenv check: CUDA 12.4.1: all 1 library resolves');
      // Log groups for each phase, the check's line in the log, the entry saved under a checksum key.
      for (const g of ['Resolve CUDA 12.4.1', 'Restore archives from', 'Install CUDA 12.4.1: cuda_cudart, cuda_nvcc', 'Save archives to', 'Check that CUDA 12.4.1']) {
        expect(r.stdout).toContain(`::group::${g}`);
      }
      expect(r.stdout.match(/::group::/g)!.length).toBe(r.stdout.match(/::endgroup::/g)!.length);
      expect(r.stdout).not.toContain('::error::');
      expect(readdirSync(cacheDir)).toEqual([expect.stringMatching(/^cudaenv-2-linux-x86_64-cuda12\.4\.1-[0-9a-f]{12}-[0-9a-f]{32}$/)]);
      // The run's archive directory is gone: the disk holds the toolkit, the cache holds the archives.
      expect(existsSync(join(r.temp, 'cudaenv-cache'))).toBe(false);
    });

    test('a later step\'s cudaenv finds the toolkit beneath its own store through the exported CUDAENV_SITE_DIRS, with no copy (issue 45)', () => {
      // The value the cold run exported (expectExports checked it).
      const own = join(tmp.dir, 'later-step-store');
      const env = cliEnv(own, {CUDAENV_SITE_DIRS: join(runner.toolCache, 'cudaenv')});
      const ls = runCli(['ls', '--json'], {env});
      expect(ls.status).toBe(0);
      const versions = (JSON.parse(ls.stdout) as {versions: Array<{version: string; store: string; site: boolean}>}).versions;
      expect(versions.find((v) => v.version === '12.4.1')).toMatchObject({store: join(runner.toolCache, 'cudaenv'), site: true});
      const which = runCli(['which', 'nvcc', '--cuda', '12.4.1'], {env});
      expect(which.stdout.trim()).toBe(join(own, 'versions', '12.4.1', 'bin', 'nvcc'));
      expect(execFileSync(which.stdout.trim(), ['--version'], {encoding: 'utf8'})).toContain('release 12.4');
    });

    test('a second run on the same tool cache makes no request at all', async () => {
      const before = server.log.length;
      // An earlier step's toolkit from this store leaves LD_LIBRARY_PATH, as `cudaenv use` does; the rest stays.
      const earlier = join(runner.toolCache, 'cudaenv', 'versions', '12.3.2', 'lib64');
      const r = await runAction(runner, {...inputs, mirror: server.url}, {CUDAENV_ACTION_CACHE_DIR: cacheDir, LD_LIBRARY_PATH: `${earlier}:/opt/other/lib`});
      expect(r.code).toBe(0);
      expect(requests(before)).toEqual([]);
      expectExports(r, dir, `${join(dir, 'lib64')}:/opt/other/lib`);
      expect(parseCommandFile(r.files.output).get('cache-hit')).toBe('true');
      expect(r.files.summary).toContain('Bytes downloaded: 0 ');
      expect(r.files.summary).toContain('tool cache');
      expect(r.stdout).toContain('is in the tool cache');
    });

    test('a fresh runner with the Actions cache restored asks the mirror only for the manifest (which the entry is checked against)', async () => {
      const fresh = makeRunner(join(tmp.dir, 'runner-b'), runner);
      const before = server.log.length;
      const r = await runAction(fresh, {...inputs, mirror: server.url}, {CUDAENV_ACTION_CACHE_DIR: cacheDir});
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(requests(before)).toEqual(['redistrib_12.4.1.json']);
      const freshDir = join(fresh.toolCache, 'cudaenv', 'versions', '12.4.1');
      expectExports(r, freshDir, join(freshDir, 'lib64'));
      expect(parseCommandFile(r.files.output)).toEqual(new Map([['version', '12.4.1'], ['cuda-path', freshDir], ['cache-hit', 'true']]));
      expect(r.files.summary).toContain('Bytes downloaded: 0 ');
      expect(r.stdout).toMatch(/restored cudaenv-2-linux-x86_64-cuda12\.4\.1-/);
      expect(r.stdout).not.toContain('::warning::');
      expect(execFileSync(join(freshDir, 'bin', 'nvcc'), ['--version'], {encoding: 'utf8'})).toContain('release 12.4');
    });

    test('a partial spec asks the mirror for its index and the manifest, then installs from the restored cache', async () => {
      const fresh = makeRunner(join(tmp.dir, 'runner-c'), runner);
      const before = server.log.length;
      const r = await runAction(fresh, {cuda: '12.4', components: 'nvcc,cudart', mirror: server.url}, {CUDAENV_ACTION_CACHE_DIR: cacheDir});
      expect(r.code).toBe(0);
      expect(requests(before)).toEqual(['', 'redistrib_12.4.1.json']);
      expect(parseCommandFile(r.files.output).get('version')).toBe('12.4.1');
    });

    test('a step asking for more than the tool cache holds installs it (and saves a new entry)', async () => {
      const before = server.log.length;
      const r = await runAction(runner, {cuda: '12.4.1', profile: 'minimal', mirror: server.url}, {CUDAENV_ACTION_CACHE_DIR: cacheDir});
      expect(r.code).toBe(0);
      expect(requests(before).sort()).toEqual(['redistrib_12.4.1.json', ...archives(served.filter((x) => !['libcublas', 'cuda_nvrtc'].includes(x.name)))].sort());
      expect(existsSync(join(dir, 'include', 'thrust', 'version.h'))).toBe(true);
      expect(readdirSync(cacheDir)).toHaveLength(2);
    });
  });

  test('defaults: the spec and cudnn= from .cuda-version; ld-library-path none; no cache service: said once, carried on', async () => {
    const runner = makeRunner(join(tmp.dir, 'runner-d'));
    writeFileSync(join(runner.workspace, '.cuda-version'), '# the project\'s CUDA\n12.4.1\ncudnn=9\n');
    // cudnn brings libcublas, whose stand-in lacks libcublasLt on purpose (the failing-check test): no check here.
    const r = await runAction(runner, {'components': 'nvcc,cudart', 'mirror': server.url, 'cudnn-mirror': cudnnServer.url, 'ld-library-path': 'none', 'check': 'false'}, {LD_LIBRARY_PATH: '/opt/other/lib'});
    expect(r.stderr).toBe('');
    expect(r.code === 0 ? '' : r.stdout).toBe('');
    const dir = join(runner.toolCache, 'cudaenv', 'versions', '12.4.1');
    expectExports(r, dir, undefined);
    expect(r.stdout.match(/::warning::/g)).toHaveLength(1);
    expect(r.stdout).toContain('::warning::the Actions cache service is not available to this runner');
    expect(r.files.summary).toContain('Cache: the Actions cache service is not available');
    expect(existsSync(join(dir, 'include', 'cudnn.h'))).toBe(true);
    expect(r.files.summary).toMatch(/<td>cudnn<\/td><td>9\.1\.0\.70<\/td>/);
    expect(r.files.summary).toContain(`Bytes downloaded: ${sizeOf(['cuda_nvcc', 'cuda_cudart', 'libcublas', 'cuda_nvrtc']) + cudnnServed[0]!.size} `);
    expect(existsSync(join(dir, 'include', 'nvrtc.h'))).toBe(true);
    expect(cudnnServer.log.map((l) => l.path)).toEqual(['', 'redistrib_9.1.0.json', cudnnServed[0]!.relativePath]);
  });

  const protocols: Array<[string, (url: string) => Record<string, string>, string[], string[]]> = [
    ['v2, as on github.com', (url) => ({ACTIONS_CACHE_SERVICE_V2: 'true', ACTIONS_RESULTS_URL: url}),
      ['GetCacheEntryDownloadURL', 'CreateCacheEntry', 'PUT /devstoreaccount1/actions-cache/1', 'FinalizeCacheEntryUpload'].map((m) => m.startsWith('PUT') ? m : `POST /twirp/github.actions.results.api.v1.CacheService/${m}`),
      ['POST /twirp/github.actions.results.api.v1.CacheService/GetCacheEntryDownloadURL', 'GET /devstoreaccount1/actions-cache/1']],
    ['v1, as on GHES', (url) => ({ACTIONS_CACHE_URL: url}),
      ['GET /_apis/artifactcache/cache', 'POST /_apis/artifactcache/caches', 'PATCH /_apis/artifactcache/caches/1', 'POST /_apis/artifactcache/caches/1'],
      ['GET /_apis/artifactcache/cache', 'GET /download/1']],
  ];
  test.each(protocols)('the bundled @actions/cache saves to and restores from a loopback cache service (%s)', async (name, envFor, saveCalls, restoreCalls) => {
    const cache = await startCacheServer();
    try {
      const service = {...envFor(cache.url), ACTIONS_RUNTIME_TOKEN: 'token-for-the-loopback-service'};
      const inputs = {cuda: '12.4.1', components: 'nvcc,cudart', mirror: server.url};
      const image = makeRunner(join(tmp.dir, `runner-svc-${name.slice(0, 2)}-1`));
      const first = await runAction(image, inputs, service);
      expect(first.code).toBe(0);
      expect(first.stdout).not.toMatch(/::(warning|error)::/);
      expect(cache.log).toEqual(saveCalls);
      expect(cache.entries.map((e) => [e.key, e.committed])).toEqual([[expect.stringMatching(/^cudaenv-2-linux-x86_64-cuda12\.4\.1-[0-9a-f]{12}-[0-9a-f]{32}$/), true]]);
      expect(cache.entries[0]!.data.length).toBeGreaterThan(0);

      const before = server.log.length;
      const fresh = makeRunner(join(tmp.dir, `runner-svc-${name.slice(0, 2)}-2`), image);
      const second = await runAction(fresh, inputs, service);
      expect(second.code).toBe(0);
      expect(second.stdout).not.toMatch(/::(warning|error)::/);
      expect(server.log.slice(before).map((l) => l.path)).toEqual(['redistrib_12.4.1.json']);
      expect(cache.log.slice(saveCalls.length)).toEqual(restoreCalls);
      expect(parseCommandFile(second.files.output).get('cache-hit')).toBe('true');
      expect(second.files.summary).toContain('Bytes downloaded: 0 ');
      expect(existsSync(join(fresh.toolCache, 'cudaenv', 'versions', '12.4.1', 'bin', 'nvcc'))).toBe(true);
    } finally {
      await cache.close();
    }
  });

  test('a cache service that does not answer: the step installs from the mirror all the same', async () => {
    const cache = await startCacheServer();
    const url = cache.url;
    await cache.close(); // nothing listens there now
    const runner = makeRunner(join(tmp.dir, 'runner-dead-cache'));
    const started = Date.now();
    const r = await runAction(runner, {cuda: '12.4.1', components: 'nvcc,cudart', mirror: server.url}, {ACTIONS_CACHE_SERVICE_V2: 'true', ACTIONS_RESULTS_URL: url, ACTIONS_RUNTIME_TOKEN: 't'});
    expect(r.code).toBe(0);
    expect(parseCommandFile(r.files.output).get('version')).toBe('12.4.1');
    // Said once (by @actions/cache), and no save tried against the same dead service.
    expect(r.stdout.split('\n').filter((l) => /^::(warning|error)/.test(l))).toEqual([expect.stringMatching(/^::warning::Failed to restore: .*ECONNREFUSED/)]);
    expect(r.stdout).not.toContain('::group::Save');
    expect(r.files.summary).toMatch(/Cache: the Actions cache failed \(Failed to GetCacheEntryDownloadURL: .*ECONNREFUSED\); nothing was restored or saved\./);
    expect(Date.now() - started).toBeLessThan(30000);
  });

  test('a library that would not load: the check\'s line as an ::error::, exit 1, the environment still exported', async () => {
    const runner = makeRunner(join(tmp.dir, 'runner-check'));
    const r = await runAction(runner, {cuda: '12.4.1', components: 'cudart,cublas', mirror: server.url, cache: 'false'});
    expect(r.code).toBe(1);
    const errors = r.stdout.split('\n').filter((l) => l.startsWith('::error'));
    expect(errors).toEqual([expect.stringMatching(/^::error title=cudaenv check::cudaenv check: CUDA 12\.4\.1: .*libcublasLt\.so\.12/)]);
    const dir = join(runner.toolCache, 'cudaenv', 'versions', '12.4.1');
    expectExports(r, dir, join(dir, 'lib64'));
    expect(r.files.summary).toMatch(/FAILED: cudaenv check: CUDA 12\.4\.1: .*libcublasLt\.so\.12/);
    // cache: false: nothing was looked up or saved, and nothing said about the cache.
    expect(r.stdout).not.toContain('::warning::');
    expect(r.stdout).not.toContain('::group::Restore');
    // check: false skips it (and so succeeds).
    const unchecked = await runAction(runner, {cuda: '12.4.1', components: 'cudart,cublas', mirror: server.url, check: 'false'});
    expect(unchecked.code).toBe(0);
    expect(unchecked.files.summary).not.toContain('cudaenv check');
  });

  test('a restored entry whose archive was damaged: that archive alone is downloaded again', async () => {
    const image = makeRunner(join(tmp.dir, 'runner-damaged-1'));
    const cacheDir = join(tmp.dir, 'damaged-cache');
    mkdirSync(cacheDir);
    const inputs = {cuda: '12.4.1', components: 'nvcc,cudart', mirror: server.url};
    expect((await runAction(image, inputs, {CUDAENV_ACTION_CACHE_DIR: cacheDir})).code).toBe(0);
    const [entry] = readdirSync(cacheDir);
    const archivesDir = join(cacheDir, entry!, 'archives');
    const nvcc = readdirSync(archivesDir).find((n) => n.includes('cuda_nvcc'))!;
    const bytes = readFileSync(join(archivesDir, nvcc));
    bytes[bytes.length >> 1] ^= 0xff;
    writeFileSync(join(archivesDir, nvcc), bytes);
    const before = server.log.length;
    const r = await runAction(makeRunner(join(tmp.dir, 'runner-damaged-2'), image), inputs, {CUDAENV_ACTION_CACHE_DIR: cacheDir});
    expect(r.code).toBe(0);
    const nvccServed = served.find((x) => x.name === 'cuda_nvcc')!;
    expect(requests(before)).toEqual(['redistrib_12.4.1.json', nvccServed.relativePath]);
    expect(r.files.summary).toContain(`Bytes downloaded: ${nvccServed.size} `);
    expect(parseCommandFile(r.files.output).get('cache-hit')).toBe('false');
  });

  describe('issue 46: an entry is the mirror\'s and the manifest\'s it was saved from', () => {
    const build = (marker: string): ComponentSpec[] => [
      {name: 'cuda_nvcc', version: '12.4.131', files: {'LICENSE': 'nvcc\n', 'bin/marker': `${marker}\n`}},
      {name: 'cuda_cudart', version: '12.4.127', files: {'LICENSE': 'cudart\n', 'include/cuda_runtime.h': '/* cudart */\n'}},
    ];
    const mirrorOf = async (name: string, marker: string, auth?: string): Promise<{root: string; server: MirrorServer; served: Served[]}> => {
      const root = join(tmp.dir, name);
      const served = writeRealRelease(root, 'cuda', '12.4.1', build(marker), join(tmp.dir, `${name}-work`));
      writeIndex(root, ['12.4.1']);
      return {root, served, server: await startMirrorServer(root, auth === undefined ? {} : {auth})};
    };
    const inputs = {cuda: '12.4.1', components: 'nvcc,cudart', check: 'false'};
    const marker = (runner: Runner): string => readFileSync(join(runner.toolCache, 'cudaenv', 'versions', '12.4.1', 'bin', 'marker'), 'utf8');

    test('an entry saved from another mirror (with credentials in its URL) is not restored for the official one; no key holds the mirror\'s password', async () => {
      const other = await mirrorOf('other-mirror', 'other build', 'alice:s3cret');
      const official = await mirrorOf('official-mirror', 'official build');
      try {
        const cacheDir = join(tmp.dir, 'cache-two-mirrors');
        mkdirSync(cacheDir);
        const first = makeRunner(join(tmp.dir, 'runner-other'));
        const url = other.server.url.replace('http://', 'http://alice:s3cret@');
        const r1 = await runAction(first, {...inputs, mirror: url}, {CUDAENV_ACTION_CACHE_DIR: cacheDir});
        expect(r1.code).toBe(0);
        expect(marker(first)).toBe('other build\n');
        const [saved] = readdirSync(cacheDir);
        expect(readFileSync(join(cacheDir, saved!, 'plan.json'), 'utf8')).toContain(`"mirror":"${other.server.url}"`);
        const second = makeRunner(join(tmp.dir, 'runner-official'), first);
        const r2 = await runAction(second, {...inputs, mirror: official.server.url}, {CUDAENV_ACTION_CACHE_DIR: cacheDir});
        expect(r2.code).toBe(0);
        expect(marker(second)).toBe('official build\n');
        expect(official.server.log.map((l) => l.path).sort()).toEqual(['redistrib_12.4.1.json', ...official.served.map((x) => x.relativePath)].sort());
        expect(parseCommandFile(r2.files.output).get('cache-hit')).toBe('false');
        const keys = readdirSync(cacheDir);
        expect(keys).toHaveLength(2);
        for (const k of keys) {
          expect(k).not.toMatch(/s3cret|alice/);
          expect(readFileSync(join(cacheDir, k, 'plan.json'), 'utf8')).not.toMatch(/s3cret|alice/);
        }
      } finally {
        await other.server.close();
        await official.server.close();
      }
    });

    test('a restored entry that the manifest fetched now contradicts (the mirror published another build) is discarded with a warning and installed fresh', async () => {
      const m = await mirrorOf('respun-mirror', 'first build');
      try {
        const cacheDir = join(tmp.dir, 'cache-respun');
        mkdirSync(cacheDir);
        const first = makeRunner(join(tmp.dir, 'runner-respun-1'));
        expect((await runAction(first, {...inputs, mirror: m.server.url}, {CUDAENV_ACTION_CACHE_DIR: cacheDir})).code).toBe(0);
        const [old] = readdirSync(cacheDir);
        const served = writeRealRelease(m.root, 'cuda', '12.4.1', build('second build'), join(tmp.dir, 'respun-work-2'));
        const before = m.server.log.length;
        const second = makeRunner(join(tmp.dir, 'runner-respun-2'), first);
        const r = await runAction(second, {...inputs, mirror: m.server.url}, {CUDAENV_ACTION_CACHE_DIR: cacheDir});
        expect(r.code).toBe(0);
        expect(marker(second)).toBe('second build\n');
        const warnings = r.stdout.split('\n').filter((l) => l.startsWith('::warning'));
        expect(warnings).toEqual([expect.stringMatching(new RegExp(`^::warning::the cache entry ${old} does not match the manifest of CUDA 12\\.4\\.1 fetched from http://127\\.0\\.0\\.1:\\d+/ for this run: its cuda_(nvcc|cudart) is sha256 [0-9a-f]{64} \\(\\d+ bytes\\), the manifest now says (${served.map((x) => `${x.sha256} \\(${x.size} bytes\\)`).join('|')})\\. It is discarded and CUDA 12\\.4\\.1 is installed from the mirror\\.$`))]);
        expect(m.server.log.slice(before).map((l) => l.path).sort()).toEqual(['redistrib_12.4.1.json', ...served.map((x) => x.relativePath)].sort());
        expect(parseCommandFile(r.files.output).get('cache-hit')).toBe('false');
        expect(r.files.summary).toContain(`Cache: the entry ${old} did not match this run&#39;s manifest`);
        expect(readdirSync(cacheDir)).toHaveLength(2); // saved under the new manifest's key
      } finally {
        await m.server.close();
      }
    });

    test('a manifest\'s version with HTML and escapes shows as text in the job summary and the log', async () => {
      const m = await mirrorOf('html-mirror', 'x');
      try {
        const file = join(m.root, 'redistrib_12.4.1.json');
        const data = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>>;
        data.cuda_nvcc!.version = '12.4.131<img src=x onerror=alert(1)>\u001b[2J';
        writeFileSync(file, JSON.stringify(data));
        const r = await runAction(makeRunner(join(tmp.dir, 'runner-html')), {...inputs, mirror: m.server.url, cache: 'false'});
        expect(r.code).toBe(0);
        expect(r.files.summary).toContain('<td>12.4.131&#60;img src=x onerror=alert(1)&#62;\\x1b[2J</td>');
        expect(r.files.summary).not.toContain('<img');
        // eslint-disable-next-line no-control-regex
        expect(r.stdout + r.files.summary).not.toMatch(/\u001b/);
      } finally {
        await m.server.close();
      }
    });
  });

  describe('failures: one ::error:: annotation, exit status 1, nothing exported', () => {
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['an unknown component', {cuda: '12.4.1', components: 'nosuch'}, /::error::CUDA 12\.4\.1 has no component "nosuch"/],
      ['a spec that is not one', {cuda: '12.x'}, /::error::the cuda input "12\.x" is not a release spec/],
      ['a bad ld-library-path', {'cuda': '12.4.1', 'ld-library-path': 'append'}, /::error::the ld-library-path input "append" is neither prepend nor none/],
      ['a release the mirror lacks', {cuda: '11.2'}, /::error::the mirror http:\/\/127\.0\.0\.1:\d+\/ offers no CUDA release matching 11\.2/],
      ['no spec and no .cuda-version', {}, /::error::no CUDA version given: the cuda input is empty and there is no \.cuda-version in /],
      // The core's hints name the CLI's --mirror / CUDAENV_MIRROR; the step says "the mirror input".
      ['a mirror that does not answer', {cuda: '12.4.1', mirror: 'http://127.0.0.1:9/'}, /::error::cannot download http:\/\/127\.0\.0\.1:9\/redistrib_12\.4\.1\.json: .*%0ACheck the network connection and the mirror \(the mirror input\)\.$/m],
    ];
    test.each(cases)('%s', async (_name, inputs, message) => {
      const runner = makeRunner(join(tmp.dir, `runner-fail-${Math.random().toString(36).slice(2)}`));
      const r = await runAction(runner, {mirror: server.url, ...inputs});
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(message);
      expect(r.stdout.match(/::error::/g)).toHaveLength(1);
      expect([r.files.env, r.files.path, r.files.output]).toEqual(['', '', '']);
      const versions = join(runner.toolCache, 'cudaenv', 'versions');
      expect(existsSync(versions) ? readdirSync(versions) : []).toEqual([]);
    });
  });
});
