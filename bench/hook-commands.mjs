// What shells start besides `use`: `cudaenv init bash` (the rc line's fallback) and `cudaenv
// switch-check LABEL` with no cached result (the hook, at a `cd` into a project), through the fast
// path (bin/run.cjs) against the same command through oclif (its execute, as bin/run.cjs calls it:
// the anchor, same work), with `node -e 0` beside them. Interleaved runs, medians; CPU time from GNU time.
// Usage: npm run build && node bench/hook-commands.mjs [runs] [toolkit dir, default /usr/local/cuda-13.0]
import {spawnSync} from 'node:child_process';
import {mkdtempSync, readdirSync, rmSync} from 'node:fs';
import {loadavg, tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {median} from './lib/measure.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.argv[2] ?? 10);
const toolkit = process.argv[3] ?? '/usr/local/cuda-13.0';
const tmp = mkdtempSync(join(tmpdir(), 'cudaenv-hook-bench-'));
const store = join(tmp, 'store');
const env = {PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: tmp, CUDAENV_DIR: store};
const cli = join(repo, 'bin', 'run.cjs');
const oclif = `require(require.resolve('@oclif/core', {paths: [${JSON.stringify(repo)}]})).execute({args: process.argv.slice(1), ` +
  `dir: ${JSON.stringify(cli)}, loadOptions: {root: ${JSON.stringify(repo)}, userPlugins: false}})`;
const add = spawnSync(process.execPath, [cli, 'add', toolkit], {env, encoding: 'utf8'});
if (add.status !== 0) throw new Error(`cudaenv add ${toolkit}: ${add.stderr}`);
const label = readdirSync(join(store, 'versions'))[0];
const uncached = () => {
  for (const f of readdirSync(join(store, 'switch'))) if (f.startsWith('check-')) rmSync(join(store, 'switch', f));
};
const cases = [
  {name: '`node -e 0`', args: [process.execPath, '-e', '0']},
  {name: '`init bash`, fast path', args: [process.execPath, cli, 'init', 'bash']},
  {name: '`init bash`, through oclif (before)', args: [process.execPath, '-e', oclif, 'init', 'bash']},
  {name: `\`switch-check ${label}\`, not cached, fast path`, args: [process.execPath, cli, 'switch-check', label], before: uncached},
  {name: `\`switch-check ${label}\`, not cached, through oclif (before)`, args: [process.execPath, '-e', oclif, 'switch-check', label], before: uncached},
];
function run(c) {
  c.before?.();
  const t0 = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S', ...c.args], {env, encoding: 'utf8'});
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`${c.name}: ${r.stderr}`);
  const [u, s] = r.stderr.trim().split('\n').pop().split(' ').map(Number);
  return {wall, cpu: (u + s) * 1000};
}
console.log(`load average at start: ${loadavg().map((x) => x.toFixed(1)).join(' ')}; toolkit ${toolkit} (${label})`);
const samples = cases.map(() => ({wall: [], cpu: []}));
for (let i = 0; i < runs + 2; i++) {
  cases.forEach((c, k) => {
    const r = run(c);
    if (i >= 2) {
      samples[k].wall.push(r.wall);
      samples[k].cpu.push(r.cpu);
    }
  });
}
console.log('| command | median wall ms | median CPU ms |\n| --- | --- | --- |');
cases.forEach((c, k) => console.log(`| ${c.name} | ${median(samples[k].wall).toFixed(0)} | ${median(samples[k].cpu).toFixed(0)} |`));
console.log(`\n${runs} interleaved runs; load average at end: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
rmSync(tmp, {recursive: true, force: true});
