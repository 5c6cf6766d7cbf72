// Issue 16 figures: what the GitHub Action downloads for `components: nvcc,cudart` of CUDA
// 12.4.1 against NVIDIA's runfile-equivalent (every linux-x86_64 archive in the real manifest),
// and the action's wall time from a loopback mirror whose two archives have the real sizes.
// Anchors (same run, interleaved): `curl -s URL | xz -dc | tar -x` for the same two archives, and
// the CLI's `cudaenv install` of the same components.
// Usage: npm run build && npm run build:action && node bench/action.mjs [runs]
// The data is generated in a temp dir (never committed) and removed at the end.
import {execFileSync, spawn, spawnSync} from 'node:child_process';
import {createHash, randomBytes} from 'node:crypto';
import {mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {median} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundle = join(root, 'dist-action', 'index.mjs');
const runs = Number(process.argv[2] ?? 3);
const label = '12.4.1';
const manifestPath = join(root, 'test', 'fixtures', 'redist-manifests', 'cuda', `redistrib_${label}.json`);
const chosen = ['cuda_nvcc', 'cuda_cudart'];
const platform = 'linux-x86_64';
const machineParts = new Set(['nvidia_driver', 'fabricmanager', 'imex', 'libnvidia_nscq', 'nvidia_fs', 'driver_assistant', 'cuda_compat', 'mft', 'mft_autocomplete', 'mft_oem', 'nvlsm', 'collectx_bringup', 'libnvsdm']);

const text = readFileSync(manifestPath, 'utf8');
const manifest = JSON.parse(text);
const entries = Object.entries(manifest).filter(([k, v]) => !k.startsWith('release_') && v && typeof v === 'object' && v[platform]);
const size = (name) => Number(manifest[name][platform].size);
const all = entries.reduce((n, [k]) => n + size(k), 0);
const toolkitOnly = entries.filter(([k]) => !machineParts.has(k)).reduce((n, [k]) => n + size(k), 0);
const ours = chosen.reduce((n, k) => n + size(k), 0);
const mib = (n) => `${(n / 1048576).toFixed(1)} MiB`;

const tmp = mkdtempSync(join(tmpdir(), 'cudaenv-bench-action-'));
let server;
process.on('exit', () => {
  server?.kill();
  rmSync(tmp, {recursive: true, force: true});
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

// Stand-ins of the real compressed sizes: incompressible bytes, which xz stores as they are.
const mirror = join(tmp, 'mirror');
const rels = [];
for (const name of chosen) {
  const entry = manifest[name][platform];
  const top = entry.relative_path.split('/').pop().replace(/\.tar\.xz$/, '');
  const src = join(tmp, 'src', top);
  mkdirSync(join(src, 'lib'), {recursive: true});
  writeFileSync(join(src, 'lib', `lib${name}.so.${manifest[name].version}`), randomBytes(Math.max(0, Number(entry.size) - 4096)));
  mkdirSync(dirname(join(mirror, entry.relative_path)), {recursive: true});
  execFileSync('sh', ['-c', 'tar -C "$1" -cf - "$2" | xz -0 -T1 -c > "$3"', 'sh', join(tmp, 'src'), top, join(mirror, entry.relative_path)]);
  rmSync(src, {recursive: true});
  const bytes = readFileSync(join(mirror, entry.relative_path));
  entry.sha256 = createHash('sha256').update(bytes).digest('hex');
  entry.size = String(bytes.length);
  rels.push(entry.relative_path);
}
writeFileSync(join(mirror, `redistrib_${label}.json`), JSON.stringify(manifest, null, 4));
const served = chosen.reduce((n, k) => n + Number(manifest[k][platform].size), 0);

server = spawn(process.execPath, [join(root, 'bench', 'install-serve.mjs'), mirror], {stdio: ['ignore', 'pipe', 'inherit']});
const port = await new Promise((resolve) => server.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
const url = `http://127.0.0.1:${port}/`;

let job = 0;
/** One step as the runner runs it; returns wall ms and the bytes its summary says it downloaded. */
function action(toolCache, cacheDir) {
  const dir = join(tmp, `job${++job}`);
  mkdirSync(join(dir, 'temp'), {recursive: true});
  mkdirSync(join(dir, 'ws'), {recursive: true});
  for (const f of ['env', 'path', 'output', 'summary']) writeFileSync(join(dir, f), '');
  const env = {
    PATH: process.env.PATH, HOME: dir, RUNNER_TOOL_CACHE: toolCache, RUNNER_TEMP: join(dir, 'temp'), GITHUB_WORKSPACE: join(dir, 'ws'),
    GITHUB_ENV: join(dir, 'env'), GITHUB_PATH: join(dir, 'path'), GITHUB_OUTPUT: join(dir, 'output'), GITHUB_STEP_SUMMARY: join(dir, 'summary'),
    'INPUT_CUDA': label, 'INPUT_COMPONENTS': 'nvcc,cudart', 'INPUT_MIRROR': url, 'INPUT_CACHE': 'true', 'INPUT_CHECK': 'true', 'INPUT_LD-LIBRARY-PATH': 'prepend',
    ...(cacheDir ? {CUDAENV_ACTION_CACHE_DIR: cacheDir} : {}),
  };
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, [bundle], {env, encoding: 'utf8'});
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`the action failed:\n${r.stdout}${r.stderr}`);
  const bytes = Number(/Bytes downloaded: (\d+)/.exec(readFileSync(join(dir, 'summary'), 'utf8'))[1]);
  return {ms, bytes};
}

function anchor() {
  const out = join(tmp, `out${++job}`);
  mkdirSync(out);
  const start = process.hrtime.bigint();
  execFileSync('sh', ['-c', rels.map((r) => `curl -s ${url}${r} | xz -dc | tar -x -C ${out}`).join(' && ')]);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  rmSync(out, {recursive: true, force: true});
  return {ms, bytes: served};
}

// The cache entry every "restored" run starts from: saved by one cold run.
const cacheDir = join(tmp, 'actions-cache');
mkdirSync(cacheDir);
action(join(tmp, 'seed-toolcache'), cacheDir);
const warmToolCache = join(tmp, 'warm-toolcache');
action(warmToolCache, undefined);

// Second anchor: the CLI's install of the same components from the same mirror (same core),
// so the step's own cost (bundle start, check, summary, exports) shows apart from the install.
function cli() {
  const store = join(tmp, `store${++job}`);
  const start = process.hrtime.bigint();
  execFileSync(process.execPath, [join(root, 'bin', 'run.cjs'), 'install', label, '--components', chosen.join(','), '--mirror', url, '--json'],
    {env: {PATH: process.env.PATH, HOME: tmp, CUDAENV_DIR: store}, stdio: 'ignore'});
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  rmSync(store, {recursive: true, force: true});
  return {ms, bytes: served};
}

const cases = {
  anchor: {name: '`curl -s URL | xz -dc | tar -x`, the 2 archives', fn: anchor, xs: []},
  cli: {name: '`cudaenv install 12.4.1 --components cuda_nvcc,cuda_cudart` (CLI, cold)', fn: cli, xs: []},
  cold: {name: 'action, cold (empty tool cache, no Actions cache)', fn: () => action(join(tmp, `tc${job}`), undefined), xs: []},
  restored: {name: 'action, Actions cache restored (empty tool cache)', fn: () => action(join(tmp, `tc${job}`), cacheDir), xs: []},
  warm: {name: 'action, tool cache kept (self-hosted runner)', fn: () => action(warmToolCache, undefined), xs: []},
};
const order = Object.values(cases);
for (let i = 0; i < runs; i++) {
  for (const c of (i % 2 ? [...order].reverse() : order)) c.xs.push(c.fn());
}
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
server.kill();
server = undefined;

console.log(`CUDA ${label}, ${platform}, from the real manifest (test/fixtures/redist-manifests/cuda/redistrib_${label}.json):\n`);
console.log('| what | bytes | MiB | share of the runfile-equivalent |');
console.log('| --- | --- | --- | --- |');
console.log(`| every ${platform} archive in the manifest (${entries.length}: the runfile-equivalent) | ${all} | ${mib(all)} | 100% |`);
console.log(`| the same without driver and machine parts (${entries.filter(([k]) => !machineParts.has(k)).length}) | ${toolkitOnly} | ${mib(toolkitOnly)} | ${(100 * toolkitOnly / all).toFixed(1)}% |`);
console.log(`| the action, components: nvcc,cudart (${chosen.join(' + ')}) | ${ours} | ${mib(ours)} | ${(100 * ours / all).toFixed(2)}% |`);
console.log(`\nWall time from a loopback mirror serving stand-ins of the real sizes (${served} bytes in 2 archives), ${runs} runs each, interleaved; load average ${load}:\n`);
console.log('| run | median ms | min ms | max ms | bytes downloaded |');
console.log('| --- | --- | --- | --- | --- |');
for (const c of order) {
  const ms = c.xs.map((x) => x.ms);
  console.log(`| ${c.name} | ${median(ms).toFixed(0)} | ${Math.min(...ms).toFixed(0)} | ${Math.max(...ms).toFixed(0)} | ${[...new Set(c.xs.map((x) => x.bytes))].join(', ')} |`);
}
console.log(`\nratio cold action / anchor: ${(median(cases.cold.xs.map((x) => x.ms)) / median(cases.anchor.xs.map((x) => x.ms))).toFixed(2)}`);
