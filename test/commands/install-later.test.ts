import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawn, spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT, cliEnv, runCliAsync} from '../helpers/cli.js';
import {laterManifestText} from '../helpers/later-manifests.js';
import {startMirrorServer, type MirrorServer} from '../helpers/mirror.js';
import {writeRealMirror, type Served} from '../helpers/real-mirror.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';

/**
 * Issue 36, end to end: releases after 13.0 from a loopback mirror. 13.4.1 is NVIDIA's real
 * 13.0.2 manifest with CCCL as `cccl` (as from 13.2), its own nvcc/cudart versions and a
 * component cudaenv does not know; 13.5.0 has no CCCL under either name.
 */

let tmp: {dir: string; cleanup: () => void};
let mirror: MirrorServer;
let n = 0;

const core13 = (cccl: string | undefined): Served[] => [
  {component: 'cuda_nvcc'}, {component: 'cuda_cudart'}, {component: 'cuda_crt'}, {component: 'libnvvm'}, ...(cccl ? [{component: cccl}] : []),
];

const env = (store: string): NodeJS.ProcessEnv => cliEnv(store, {CUDAENV_MIRROR: mirror.url, CUDAENV_RETRY_DELAY_MS: '20'});

beforeAll(async () => {
  tmp = makeTempDir('cudaenv-install-later-');
  writeRealMirror(join(tmp.dir, 'cuda'), 'cuda', [
    {label: '13.0.2', serve: core13('cuda_cccl')},
    {label: '13.4.1', serve: core13('cccl'), text: laterManifestText({label: '13.4.1', extra: ['cuda_tileiras'], versions: {cuda_nvcc: '13.4.91', cuda_cudart: '13.4.88', cuda_crt: '13.4.91', libnvvm: '13.4.91'}})},
    {label: '13.5.0', serve: core13(undefined), text: laterManifestText({label: '13.5.0', cccl: 'none', extra: ['cuda_cxx_core'], versions: {cuda_nvcc: '13.5.42', cuda_cudart: '13.5.40'}})},
  ], join(tmp.dir, 'work'));
  mirror = await startMirrorServer(join(tmp.dir, 'cuda'));
}, 180000);

afterAll(async () => {
  await mirror?.close();
  tmp?.cleanup();
});

describe('install of releases after 13.0', () => {
  test('13.4 --profile minimal installs CCCL from `cccl`: Thrust\'s headers are there; the unknown component is a note', async () => {
    const store = join(tmp.dir, `store${n++}`);
    const r = await runCliAsync(['install', '13.4', '--profile', 'minimal', '--json'], env(store));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect((out.components as Array<{name: string}>).map((c) => c.name).sort()).toEqual(['cccl', 'cuda_crt', 'cuda_cudart', 'cuda_nvcc', 'libnvvm']);
    expect(out).toMatchObject({version: '13.4.1', missing_parts: [], unknown_components: ['cuda_tileiras'], warnings: []});
    expect(out.notes).toEqual(['CUDA 13.4.1 has components cudaenv does not know, not in the minimal profile: cuda_tileiras; add them with --components (or use --profile full) if you need them']);
    const dir = join(store, 'versions', '13.4.1');
    expect(readFileSync(join(dir, 'include', 'cccl', 'thrust', 'version.h'), 'utf8')).toContain('THRUST_VERSION');
    expect(existsSync(join(dir, 'licenses', 'cccl', 'LICENSE'))).toBe(true);
    const receipt = JSON.parse(readFileSync(join(dir, '.cudaenv-receipt.json'), 'utf8')) as {components: Array<{name: string; relative_path: string}>};
    expect(receipt.components.find((c) => c.name === 'cccl')!.relative_path).toBe('cccl/linux-x86_64/cccl-linux-x86_64-13.0.85-archive.tar.xz');
  });

  test('13.5 without CCCL under either name: refused unless --allow-missing-parts (issue 44 item 5); with it, the install says so on stderr, and --json names the part', async () => {
    const store = join(tmp.dir, `store${n++}`);
    const refused = await runCliAsync(['install', '13.5.0', '--profile', 'minimal'], env(store));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('cudaenv: CUDA 13.5.0 has no archive for linux-x86_64 of the CCCL headers (Thrust, CUB, libcu++');
    expect(refused.stderr).toContain('(looked for as cccl or cuda_cccl): nothing was installed\nInstall it without that part with --allow-missing-parts (code that needs it will not build), or choose another release (`cudaenv ls-remote`), --profile or --arch. CUDA 13.5.0 has components cudaenv does not know (cuda_cxx_core): if one of them is the part under a new name, add it with --components NAME.\n');
    expect(existsSync(join(store, 'versions', '13.5.0'))).toBe(false);
    const text = await runCliAsync(['install', '13.5.0', '--profile', 'minimal', '--allow-missing-parts'], env(store));
    expect(text.code).toBe(0);
    expect(text.stderr).toContain('CUDA 13.5.0 has no archive for linux-x86_64 of the CCCL headers (Thrust, CUB, libcu++');
    expect(text.stderr).toContain('(looked for as cccl or cuda_cccl): installed without it, so code that needs it will not build; CUDA 13.5.0 has components cudaenv does not know (cuda_cxx_core): if one of them is the part under a new name, add it with --components NAME');
    expect(text.stdout).toContain('Installed CUDA 13.5.0 in');
    expect(existsSync(join(store, 'versions', '13.5.0', 'include', 'cccl'))).toBe(false);

    const again = await runCliAsync(['install', '13.5.0', '--profile', 'minimal', '--force', '--allow-missing-parts', '--json'], env(store));
    expect(again.code).toBe(0);
    const out = JSON.parse(again.stdout) as {missing_parts: unknown; warnings: string[]; status: string};
    expect(out.status).toBe('reinstalled');
    expect(out.missing_parts).toEqual([{part: 'cccl', what: expect.stringContaining('CCCL headers'), names: ['cccl', 'cuda_cccl']}]);
    expect(out.warnings).toEqual([expect.stringMatching(/^CUDA 13\.5\.0 has no archive for linux-x86_64 of the CCCL headers/)]);
  });

  test('--components cuda_cccl on 13.4.1 installs `cccl` and says so; 13.0.2 keeps cuda_cccl', async () => {
    const store = join(tmp.dir, `store${n++}`);
    const r = await runCliAsync(['install', '13.4.1', '--components', 'cuda_cudart,cuda_cccl', '--json'], env(store));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as {components: Array<{name: string}>; notes: string[]; unknown_components: string[]};
    expect(out.components.map((c) => c.name).sort()).toEqual(['cccl', 'cuda_cudart']);
    expect(out.notes).toEqual(['--components cuda_cccl: CUDA 13.4.1 has it as cccl, which is installed']);
    expect(out.unknown_components).toEqual([]);
    const old = await runCliAsync(['install', '13.0.2', '--profile', 'minimal', '--json'], env(store));
    expect(old.code).toBe(0);
    expect(JSON.parse(old.stdout)).toMatchObject({missing_parts: [], unknown_components: [], notes: []});
  });
});

describe('the tables say how old they are', () => {
  test('ls-remote names the releases newer than the release table and the driver table (stderr; --json: tables)', async () => {
    const store = join(tmp.dir, `store${n++}`);
    const json = await runCliAsync(['ls-remote', '--json'], env(store));
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).tables).toEqual({
      release_table: {oldest: '11.4.2', newest: '13.0.2', newer: ['13.4.1', '13.5.0']},
      driver_table: {newest: '13.3.1', newer: ['13.4.1', '13.5.0']},
    });
    const text = await runCliAsync(['ls-remote'], env(store));
    // 13.5.0 lacks CCCL: install refuses it, and ls-remote says so by the same rule (issue 44 item 5).
    expect(text.stdout).toBe('  13.0.2\n  13.4.1\n! 13.5.0  (cannot be installed: it has no linux-x86_64 archive of cccl or cuda_cccl, which the devel profile takes; --allow-missing-parts installs it without)\n');
    expect(text.stderr).toBe([
      'cudaenv: note: 13.4.1 and 13.5.0 are newer than cudaenv\'s release table (11.4.2 to 13.0.2): a toolkit of them installed without cudaenv is named from this mirror\'s manifests (cudaenv add reads them)',
      'cudaenv: note: 13.4.1 and 13.5.0 are newer than cudaenv\'s driver table (to 13.3.1): their minimum driver is not known to cudaenv (doctor checks them against 13.3.1\'s as a lower bound)',
      '',
    ].join('\n'));
    const known = await runCliAsync(['ls-remote', '13.0'], env(store));
    expect(known.stderr).toBe('');
  });

  test('gen-release-table.mjs --mirror adds the releases a mirror serves and keeps the others; credentials never reach the table', async () => {
    const out = join(tmp.dir, 'gen', 'releases.json');
    mkdirSync(join(tmp.dir, 'gen'), {recursive: true});
    copyFileSync(join(REPO_ROOT, 'src', 'core', 'versions', 'releases.json'), out);
    const before = JSON.parse(readFileSync(out, 'utf8')) as {releases: Record<string, Record<string, string>>};
    const url = mirror.url.replace('http://', 'http://maint:s3cret@');
    const r = await new Promise<{status: number | null; stdout: string; stderr: string}>((resolve) => {
      // Asynchronously: the loopback mirror answers from this process.
      const child = spawn(process.execPath, [join(REPO_ROOT, 'scripts', 'gen-release-table.mjs'), '--mirror', url, out]);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d));
      child.stderr.on('data', (d: Buffer) => (stderr += d));
      child.on('close', (status) => resolve({status, stdout, stderr}));
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`releases.json: ${Object.keys(before.releases).length + 2} releases (11.4.2 to 13.5.0); from ${mirror.url}: 2 new or changed (13.4.1, 13.5.0)\n`);
    const text = readFileSync(out, 'utf8');
    expect(text).not.toContain('s3cret');
    const after = JSON.parse(text) as {source: string; releases: Record<string, Record<string, string>>};
    expect(after.source).toBe('NVIDIA redistrib_X.Y.Z.json manifests 11.4.2 to 13.5.0; regenerate with node scripts/gen-release-table.mjs --mirror URL');
    expect(after.releases['11.8.0']).toEqual(before.releases['11.8.0']);
    expect(after.releases['13.0.2']).toEqual(before.releases['13.0.2']);
    expect(after.releases['13.4.1']).toMatchObject({cccl: '13.0.85', cuda_nvcc: '13.4.91', cuda_cudart: '13.4.88', cuda_tileiras: '13.0.85'});
    expect(after.releases['13.4.1']!.nvidia_driver).toBeUndefined();
    expect(after.releases['13.5.0']!.cuda_cccl).toBeUndefined();
    // One release per line, as the shipped table.
    expect(text.split('\n').filter((l) => l.startsWith('    "13.4.1": {'))).toHaveLength(1);

    const empty = join(tmp.dir, 'empty-mirror');
    mkdirSync(empty, {recursive: true});
    writeFileSync(join(empty, 'index.html'), '<html><body>nothing</body></html>');
    const none = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'gen-release-table.mjs'), '--mirror', empty, out], {encoding: 'utf8'});
    expect(none.status).toBe(1);
    expect(none.stderr).toBe(`gen-release-table: the mirror ${empty} holds no redistrib_X.Y.Z.json: is it the cuda/redist/ folder?\n`);
    expect(readFileSync(out, 'utf8')).toBe(text); // the table is left as it was
  });
});

describe('a registered toolkit newer than the release table is named from the mirror\'s manifests', () => {
  /** A 13.4.1 toolkit without version.json: nvcc 13.4.91 and cudart 13.4.88, as the mirror's 13.4.1 manifest has them. */
  const toolkit = (name: string): string => makeFakeToolkit(join(tmp.dir, name), {nvccVersion: '13.4.91', cudartVersion: '13.4.88'});
  const dead = 'http://127.0.0.1:1/';

  test('add reads the 13.4.x manifests the mirror serves, keeps them in the store\'s cache, and names the toolkit 13.4.1; offline afterwards, from the cache', async () => {
    const store = join(tmp.dir, `store${n++}`);
    const tk = toolkit('cuda-13.4');
    const before = mirror.log.length;
    const r = await runCliAsync(['add', tk, '--json'], env(store));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({label: '13.4.1', source: 'components', release: {kind: 'exact', candidates: ['13.4.1']}});
    expect(out.warning).toBeUndefined();
    expect(out.releaseFrom).toBe(`the manifest of 13.4.1 from ${mirror.url} (kept in ${join(store, 'cache')}/releases.json)`);
    // Only the index and the manifests of 13.4.x: not 13.5.0's, not the table's 13.0.2.
    expect(mirror.log.slice(before).map((l) => l.path).sort()).toEqual(['', 'redistrib_13.4.1.json']);
    const cached = JSON.parse(readFileSync(join(store, 'cache', 'releases.json'), 'utf8')) as {releases: Record<string, {components: Record<string, string>; mirror: string}>};
    expect(Object.keys(cached.releases)).toEqual(['13.4.1']);
    expect(cached.releases['13.4.1']).toMatchObject({mirror: mirror.url, components: {cuda_nvcc: '13.4.91', cuda_cudart: '13.4.88', cccl: '13.0.85'}});
    expect(cached.releases['13.4.1']!.components.nvidia_driver).toBeUndefined();

    // Offline (the mirror unreachable): unregistered and added again, named from the cache, nothing asked.
    expect((await runCliAsync(['uninstall', '13.4.1'], env(store))).code).toBe(0);
    const count = mirror.log.length;
    const offline = await runCliAsync(['add', tk], {...env(store), CUDAENV_MIRROR: dead});
    expect(offline.code).toBe(0);
    expect(offline.stderr).toBe('');
    expect(offline.stdout).toContain(`Registered CUDA 13.4.1 from ${tk} (the NVIDIA release whose components it has: cuda_cudart 13.4.88, cuda_nvcc 13.4.91, as the manifest of 13.4.1 from ${mirror.url} (kept in ${join(store, 'cache')}/releases.json) lists them).`);
    expect(mirror.log.length).toBe(count);

    // doctor names an unregistered copy the same way, offline, from the cache.
    const copy = toolkit('cuda-13.4-copy');
    // PATH without /usr/local/bin, where a machine's own nvcc would be the active toolkit.
    const doctor = await runCliAsync(['doctor', '--json'], {...env(store), CUDAENV_MIRROR: dead, CUDA_HOME: copy, PATH: '/usr/bin:/bin'});
    const facts = (JSON.parse(doctor.stdout) as {facts: {activeToolkit: {version: string}}}).facts;
    expect(facts.activeToolkit.version).toBe('13.4.1');
    expect(mirror.log.length).toBe(count);
  });

  test('without any manifest (the mirror unreachable, nothing cached): the runtime\'s own version, and the warning says which table cudaenv has and how to name it', async () => {
    const store = join(tmp.dir, `store${n++}`);
    const tk = toolkit('cuda-13.4-offline');
    const r = await runCliAsync(['add', tk, '--json'], {...env(store), CUDAENV_MIRROR: dead});
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as {label: string; release: {kind: string}; warning: string};
    expect(out).toMatchObject({label: '13.4.88', release: {kind: 'newer'}});
    expect(out.warning).toMatch(new RegExp(`^the components of ${tk} \\(cuda_cudart 13\\.4\\.88, cuda_nvcc 13\\.4\\.91\\) are newer than every release in cudaenv's release table \\(11\\.4\\.2 to 13\\.0\\.2\\), and the mirror http://127\\.0\\.0\\.1:1/ could not be read \\(.+\\): taken as 13\\.4\\.88, the runtime's own version; to name its release, run \`cudaenv add ${tk}\` where the mirror can be reached \\(it reads the mirror's redistrib manifests and keeps them in the store's cache\\), or with --mirror DIR naming a copy of them; or name it yourself: cudaenv add ${tk} --as VERSION$`));
    expect(existsSync(join(store, 'cache', 'releases.json'))).toBe(false);
  });

  test('a mirror that serves no manifest of the toolkit\'s release says so; --mirror names the mirror to read', async () => {
    const store = join(tmp.dir, `store${n++}`);
    const tk = makeFakeToolkit(join(tmp.dir, 'cuda-13.9'), {nvccVersion: '13.9.20', cudartVersion: '13.9.21'});
    const r = await runCliAsync(['add', tk, '--mirror', mirror.url], {...env(store), CUDAENV_MIRROR: dead});
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Registered CUDA 13.9.21 from ${tk}`);
    expect(r.stderr).toContain(`are newer than every release in cudaenv's release table (11.4.2 to 13.0.2), nor does any manifest the mirror ${mirror.url} serves for 13.9.x: taken as 13.9.21, the runtime's own version; if NVIDIA has published its release since, a mirror that serves its manifest names it (cudaenv add --mirror URL); or name it yourself`);
  });
});
