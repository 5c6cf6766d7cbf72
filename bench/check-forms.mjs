// Issue 42: every form of a cached check against `node -e 0`, interleaved, with an earlier build beside it:
// `check` without PATH (the active toolkit and the Python environment: before, oclif's start and a python3
// on every run) and the import model `check PATH... --exe PROGRAM` (before, through oclif). The environment
// is this machine's: /usr/local/cuda (the system toolkit) and the python3 on PATH, which must be an ELF
// binary (a pyenv shim is asked every time), so the check passes and is cached (a failing check never is).
// Usage: npm run build && node bench/check-forms.mjs [runs] [BEFORE_TREE]   (BEFORE_TREE: a built clone of an earlier commit)
import {spawnSync} from 'node:child_process';
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {compare} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.argv[2] ?? 15);
const before = process.argv[3] ? join(process.argv[3], 'bin', 'cudaenv') : null;
const cli = join(root, 'bin', 'cudaenv');
if (!existsSync('/usr/local/cuda/lib64') && !existsSync('/usr/local/cuda/lib')) {
  console.error('no /usr/local/cuda: this benchmark checks the system toolkit');
  process.exit(2);
}
const store = mkdtempSync(join(tmpdir(), 'cudaenv-bench-forms-'));
process.on('exit', () => {
  rmSync(store, {recursive: true, force: true});
  rmSync(`${store}-before`, {recursive: true, force: true});
});
const env = {...process.env, CUDAENV_DIR: store, PATH: `/usr/bin:/bin:${dirname(process.execPath)}`};
// Node 20 parses NODE_EXTRA_CA_CERTS before any code runs: the anchor must not pay it where the launcher defers it.
delete env.NODE_EXTRA_CA_CERTS;
for (const v of ['NODE_OPTIONS', 'LD_LIBRARY_PATH', 'LD_PRELOAD', 'GLIBC_TUNABLES', 'CUDAENV_VERSION', 'VIRTUAL_ENV', 'CONDA_PREFIX', 'PYTHONPATH']) delete env[v];
const python = spawnSync('sh', ['-c', 'command -v python3'], {env, encoding: 'utf8'}).stdout.trim();
const lib = existsSync('/usr/local/cuda/lib64') ? '/usr/local/cuda/lib64' : '/usr/local/cuda/lib';
const libs = spawnSync('sh', ['-c', `ls ${lib}/libcudart.so.* ${lib}/libnvrtc.so.* 2>/dev/null | head -2`], {encoding: 'utf8'}).stdout.trim().split('\n').filter(Boolean);
const forms = [
  {name: 'cudaenv check (no PATH)', args: ['check']},
  {name: `cudaenv check ${libs.length} libraries --exe ${python} (import model)`, args: ['check', ...libs, '--exe', python]},
];
const first = forms.map((f) => spawnSync(cli, f.args, {env, encoding: 'utf8'}));
const cases = [
  ...forms.map((f) => ({name: `${f.name}, cached`, cmd: cli, args: f.args, options: {env, allowFailure: true}})),
  {name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'], options: {env}},
  ...(before ? forms.map((f) => ({name: `${f.name}, cached, by ${process.argv[3]} (before)`, cmd: before, args: f.args, options: {env: {...env, CUDAENV_DIR: `${store}-before`}, allowFailure: true}})) : []),
];
const results = compare(cases, {runs, warmup: 2});
const node = results[forms.length];
console.log('| command | median ms | min ms | max ms | x node -e 0 |');
console.log('| --- | --- | --- | --- | --- |');
for (const r of results) console.log(`| \`${r.name}\` | ${r.median.toFixed(0)} | ${r.min.toFixed(0)} | ${r.max.toFixed(0)} | ${(r.median / node.median).toFixed(2)} |`);
forms.forEach((f, i) => console.log(`${f.name}: exit ${first[i].status}; cached ${(results[i].median / node.median).toFixed(2)}x node -e 0 (goal <= 2x): ${results[i].median <= 2 * node.median ? 'MET' : 'NOT MET'}`));
console.log(`python3: ${python}; load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
