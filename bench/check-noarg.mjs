// `cudaenv check` without PATH (the active toolkit and the Python environment), cached, against `node -e 0`,
// interleaved, in whatever environment it runs in. bench/check-torch-noarg.sh runs it inside the PyTorch
// image (a chroot), where the image's own python3 finds its torch and the check passes, so it is cached.
// Usage: node bench/check-noarg.mjs [runs]
import {spawnSync} from 'node:child_process';
import {mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {compare} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.argv[2] ?? 10);
const cli = join(root, 'bin', 'run.cjs');
const store = mkdtempSync(join(tmpdir(), 'cudaenv-bench-noarg-'));
process.on('exit', () => rmSync(store, {recursive: true, force: true}));
const env = {...process.env, CUDAENV_DIR: store};
// Node 20 parses NODE_EXTRA_CA_CERTS before any code runs: the anchor must not pay it where the launcher defers it.
delete env.NODE_EXTRA_CA_CERTS;
for (const v of ['NODE_OPTIONS', 'LD_LIBRARY_PATH', 'LD_PRELOAD', 'CUDAENV_VERSION', 'VIRTUAL_ENV', 'CONDA_PREFIX', 'PYTHONPATH']) delete env[v];
const first = spawnSync(process.execPath, [cli, 'check'], {env, encoding: 'utf8'});
console.log(`first run: exit ${first.status}; ${first.stdout.split('\n')[0]}; last line: ${first.stdout.trim().split('\n').pop()}`);
const results = compare([
  {name: 'cudaenv check (no PATH), cached', cmd: process.execPath, args: [cli, 'check'], options: {env, allowFailure: true}},
  {name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'], options: {env}},
], {runs, warmup: 2});
for (const r of results) console.log(`| \`${r.name}\` | ${r.median.toFixed(0)} | ${r.min.toFixed(0)} | ${r.max.toFixed(0)} |`);
const ratio = results[0].median / results[1].median;
console.log(`check without PATH, cached: ${ratio.toFixed(2)}x node -e 0 (goal <= 2x): ${ratio <= 2 ? 'MET' : 'NOT MET'}; node ${process.version}; load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
