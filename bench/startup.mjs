// Issue 2 speed target: `cudaenv --version` and `cudaenv current` each take at most 2x the
// wall time of `node -e 0`, medians of interleaved runs. Usage: npm run build && node bench/startup.mjs [runs]
import {mkdtempSync, mkdirSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join, dirname} from 'node:path';
import {fileURLToPath} from 'node:url';
import {compare} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The command users have on PATH: the launcher (sh, then Node on bin/run.cjs).
const cli = join(root, 'bin', 'cudaenv');
const runs = Number(process.argv[2] ?? 30);

// A store with one version, a global default and a project pinned by .cuda-version,
// so `current` does its real work: walk up, parse the file, resolve against the store.
const tmp = mkdtempSync(join(tmpdir(), 'cudaenv-bench-'));
const store = join(tmp, 'store');
mkdirSync(join(store, 'versions', '12.4.1', 'bin'), {recursive: true});
writeFileSync(join(store, 'global'), '12\n');
const project = join(tmp, 'proj', 'a', 'b', 'c');
mkdirSync(project, {recursive: true});
writeFileSync(join(tmp, 'proj', '.cuda-version'), '12.4\n');
const env = {...process.env, CUDAENV_DIR: store};
delete env.CUDAENV_VERSION;
delete env.NODE_OPTIONS;
// The anchor at its fastest: Node parses this file before any code runs (the launcher defers it).
delete env.NODE_EXTRA_CA_CERTS;
const options = {env, cwd: project};

const results = compare([
  {name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'], options},
  {name: 'cudaenv --version', cmd: cli, args: ['--version'], options},
  {name: 'cudaenv current', cmd: cli, args: ['current'], options},
], {runs});
rmSync(tmp, {recursive: true, force: true});

const anchor = results[0].median;
console.log(`| command | median ms | min ms | max ms | ratio to node -e 0 |`);
console.log(`| --- | --- | --- | --- | --- |`);
for (const r of results) {
  console.log(`| \`${r.name}\` | ${r.median.toFixed(1)} | ${r.min.toFixed(1)} | ${r.max.toFixed(1)} | ${(r.median / anchor).toFixed(2)}x |`);
}
const worst = Math.max(results[1].median, results[2].median) / anchor;
console.log(`\n${runs} interleaved runs each; target <= 2.00x; worst ${worst.toFixed(2)}x: ${worst <= 2 ? 'PASS' : 'FAIL'}`);
process.exitCode = worst <= 2 ? 0 : 1;
