// Issue 13, item 3: `cudaenv use 12.4` with its check cached vs `node -e 0` (target <= 2x), and
// the first check of a toolkit plus a Python environment with torch and the nvidia wheels
// (48 real ELF libraries, bench/lib/torch-tree.mjs; target < 500 ms), the check cache
// removed before each of those runs. Interleaved runs, medians; CPU time (user+system, from
// GNU time) beside wall time, since other work on a shared machine inflates wall time.
// Usage: npm run build && node bench/use.mjs [runs]
import {spawnSync} from 'node:child_process';
import {mkdtempSync, readdirSync, rmSync} from 'node:fs';
import {loadavg, tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {median} from './lib/measure.mjs';
import {buildTorchTree} from './lib/torch-tree.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
// The command the shell function runs: the launcher on PATH (sh, then Node on bin/run.cjs).
const cli = join(repo, 'bin', 'cudaenv');
const runs = Number(process.argv[2] ?? 20);
const tmp = mkdtempSync(join(tmpdir(), 'cudaenv-use-bench-'));
const store = join(tmp, 'store');
const tree = buildTorchTree(tmp);
const env = {PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: tmp, CUDAENV_DIR: store, CUDAENV_SHELL: 'bash', VIRTUAL_ENV: tree.venv};
const add = spawnSync(cli, ['add', tree.toolkit], {env, encoding: 'utf8'});
if (add.status !== 0) throw new Error(add.stderr);
const switchDir = join(store, 'switch');
const clearCache = () => {
  for (const f of readdirSync(switchDir)) if (f.startsWith('check-')) rmSync(join(switchDir, f));
};

/** wall ms and cpu ms (GNU time's user+system, 10 ms resolution) of one run. */
function run(args, before) {
  before?.();
  const t0 = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S', ...args], {env, encoding: 'utf8'});
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`);
  const [u, s] = r.stderr.trim().split('\n').pop().split(' ').map(Number);
  return {wall, cpu: (u + s) * 1000, stdout: r.stdout};
}

const cases = [
  {name: '`node -e 0`', args: [process.execPath, '-e', '0']},
  {name: '`cudaenv use 12.4`, check cached', args: [cli, 'use', '12.4']},
  {name: '`cudaenv current` (issue 2\'s fast path, for comparison)', args: [cli, 'current']},
  {name: '`cudaenv use 12.4`, first check (toolkit + torch + nvidia wheels)', args: [cli, 'use', '12.4'], before: clearCache},
];
console.log(`load average at start: ${loadavg().map((x) => x.toFixed(1)).join(' ')}; ${tree.count} libraries in the tree`);
run(cases[1].args); // fills the cache
const samples = cases.map(() => ({wall: [], cpu: []}));
for (let i = 0; i < runs + 2; i++) {
  cases.forEach((c, k) => {
    const r = run(c.args, c.before);
    if (i >= 2) {
      samples[k].wall.push(r.wall);
      samples[k].cpu.push(r.cpu);
    }
  });
}
const line = spawnSync('sh', ['-c', `grep '^L' '${join(switchDir, 'check-12.4.1')}' | head -n 1`], {encoding: 'utf8'}).stdout.trim();
console.log(`check line: ${line.slice(2)}\n`);
console.log('| command | median wall ms | median CPU ms | ratio to `node -e 0` (wall) |');
console.log('| --- | --- | --- | --- |');
const m = samples.map((s) => ({wall: median(s.wall), cpu: median(s.cpu)}));
cases.forEach((c, k) => console.log(`| ${c.name} | ${m[k].wall.toFixed(0)} | ${m[k].cpu.toFixed(0)} | ${(m[k].wall / m[0].wall).toFixed(2)}x |`));
const ratio = m[1].wall / m[0].wall;
console.log(`\n${runs} interleaved runs; load average at end: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log(`cached: ${ratio.toFixed(2)}x node -e 0 (target <= 2x): ${ratio <= 2 ? 'PASS' : 'FAIL'}; first check: ${m[3].wall.toFixed(0)} ms wall, ${m[3].cpu.toFixed(0)} ms CPU (target < 500 ms): ${m[3].wall < 500 ? 'PASS' : 'FAIL'}`);
rmSync(tmp, {recursive: true, force: true});
