// Issue 3 scale target: `cudaenv check DIRS` vs `for f in FILES; do ldd -r "$f"; done` over the same
// files, in one run: at least 10x faster (issue 12; issue 3 asked 5x), and no failing problem where `ldd -r` reports none.
// Both forms of the check are measured: the first check of the tree (`--no-cache`: every file read
// and modelled) and the check of an unchanged tree, answered from the verdict cache that the
// untimed warm-up round fills (a private CUDAENV_DIR, so nothing of the user's store is used).
// The floors are measured beside them: a fresh Node.js process that only reads the tables every
// check must read (bench/lib/check-floor.mjs), and one that also finds each file's dependencies
// and looks every reference up, without the loader's rules (bench/lib/check-lookup-floor.mjs, on
// one thread and on two), to show how much of the time is the model's.
// Usage: npm run build && node bench/check-scale.mjs [runs] [DIR...]
// (default DIRs: /usr/lib/x86_64-linux-gnu /usr/local/cuda-13.0/lib, those that exist)
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {compare} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The command users have on PATH: the launcher (it starts Node with NODE_EXTRA_CA_CERTS and the
// loader's variables moved aside, as bin/cudaenv explains).
const cli = join(root, 'bin', 'cudaenv');
const runs = Number(process.argv[2] ?? 3);
const given = process.argv.slice(3);
const dirs = (given.length > 0 ? given : ['/usr/lib/x86_64-linux-gnu', '/usr/local/cuda-13.0/lib']).filter((d) => existsSync(d));
if (dirs.length === 0) {
  console.error('no directory to check');
  process.exit(2);
}
const store = mkdtempSync(join(tmpdir(), 'cudaenv-bench-check-'));
// A store that has its cache directory, as one any earlier command made: the launcher keeps its
// compiled code there from the untimed warm-up round on.
mkdirSync(join(store, 'cache'), {mode: 0o755});
process.on('exit', () => rmSync(store, {recursive: true, force: true}));
const env = {...process.env, CUDAENV_DIR: store, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`};
delete env.NODE_OPTIONS;
delete env.LD_LIBRARY_PATH;
delete env.LD_PRELOAD;

// What the check covers (linker scripts and other non-ELF files are skipped with a note).
const first = spawnSync(cli, ['check', '--json', '--no-cache', ...dirs], {env, encoding: 'utf8', maxBuffer: 512 * 1024 * 1024});
const report = JSON.parse(first.stdout);
const files = report.checked;
const linkerScripts = report.skipped.filter((s) => s.reason.includes('linker script')).length;

const floorEnv = {...env};
delete floorEnv.NODE_EXTRA_CA_CERTS;
const loop = 'for f in "$@"; do ldd -r "$f"; done >/dev/null 2>&1';
const results = compare([
  {name: `cudaenv check --no-cache ${dirs.join(' ')} (first check)`, cmd: cli, args: ['check', '--no-cache', ...dirs], options: {env, allowFailure: true}},
  // The launcher keeps V8's code of its bundle from an earlier command (bin/run.cjs): the first check
  // of a tree without it (a store's very first command) is measured too.
  {name: `cudaenv check --no-cache ${dirs.join(' ')} (first check, no compiled code kept: NODE_DISABLE_COMPILE_CACHE=1)`, cmd: cli, args: ['check', '--no-cache', ...dirs], options: {env: {...env, NODE_DISABLE_COMPILE_CACHE: '1'}, allowFailure: true}},
  {name: `cudaenv check ${dirs.join(' ')} (unchanged tree, cached)`, cmd: cli, args: ['check', ...dirs], options: {env, allowFailure: true}},
  {name: `for f in ...; do ldd -r "$f"; done (${files.length} files)`, cmd: 'bash', args: ['-c', loop, 'bash', ...files], options: {env, allowFailure: true}},
  // The floor: a fresh Node.js process that only reads the tables any check must read
  // (lib/check-floor.mjs), started as bin/cudaenv starts Node (without NODE_EXTRA_CA_CERTS).
  {name: `node bench/lib/check-floor.mjs (${files.length} files: reading the tables only, no model)`, cmd: process.execPath, args: [join(root, 'bench', 'lib', 'check-floor.mjs'), ...files], options: {env: floorEnv}},
  // The lookup floor: the same reading, then each file's DT_NEEDED closure found and every
  // reference looked up through the providers' GNU hash tables, nothing more (lib/check-lookup-floor.mjs);
  // and the same split over two worker threads, to show what the second core gives.
  {name: `node bench/lib/check-lookup-floor.mjs (${files.length} files: reading, dependency closure and every lookup, no loader rules)`, cmd: process.execPath, args: [join(root, 'bench', 'lib', 'check-lookup-floor.mjs'), ...files], options: {env: floorEnv}},
  {name: `node bench/lib/check-lookup-floor.mjs --threads 2 (the same, the files shared by two threads)`, cmd: process.execPath, args: [join(root, 'bench', 'lib', 'check-lookup-floor.mjs'), '--threads', '2', ...files], options: {env: floorEnv}},
], {runs, warmup: 1});
// The cached report must be the uncached one, byte for byte.
const cachedJson = spawnSync(cli, ['check', '--json', ...dirs], {env, encoding: 'utf8', maxBuffer: 512 * 1024 * 1024}).stdout;
const sameReport = cachedJson === first.stdout;

// CPU time (user + sys of the command and its children, from GNU time): unlike wall time it barely
// depends on what else the machine runs. Median of 3 each.
function cpuSeconds(cmd, args) {
  const r = spawnSync('/usr/bin/time', ['-f', '@@%U %S', cmd, ...args], {env, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 64 * 1024 * 1024});
  const m = /@@([\d.]+) ([\d.]+)\s*$/.exec(r.stderr ?? '');
  return m ? Number(m[1]) + Number(m[2]) : Number.NaN;
}
const cpu = existsSync('/usr/bin/time')
  ? [[cli, ['check', '--no-cache', ...dirs]], [cli, ['check', ...dirs]], ['bash', ['-c', loop, 'bash', ...files]]].map(([cmd, args]) => {
    const v = [0, 1, 2].map(() => cpuSeconds(cmd, args)).sort((a, b) => a - b);
    return v[1];
  })
  : null;

// The verdicts: every failing problem ldd -r prints, against what the check reported.
const marked = spawnSync('bash', ['-c', 'for f in "$@"; do echo "@@@ $f"; ldd -r "$f" 2>&1; done', 'bash', ...files], {env, encoding: 'utf8', maxBuffer: 512 * 1024 * 1024});
const lddFailing = new Set();
const lddUnversioned = new Set();
for (const line of marked.stdout.split('\n')) {
  let m = /^\t(\S+) => not found$/.exec(line);
  if (m) lddFailing.add(`not-found ${m[1]}`);
  m = /version `([^']+)' not found \(required by (.+)\)$/.exec(line);
  if (m) lddFailing.add(`version-not-found ${m[1]} ${m[2]}`);
  m = /^undefined symbol: ([^,\t]+)(?:, version (\S+))?\t\((.+)\)$/.exec(line);
  if (m && m[2]) lddFailing.add(`undefined-symbol ${m[1]}@${m[2]} ${m[3]}`);
  else if (m) lddUnversioned.add(`${m[1]} ${m[3]}`);
}
const ours = new Set();
const oursUnversioned = new Set();
// A run-time load (a dlopen read from the library's strings, issue 43) that cannot be found costs a
// feature (impact 'feature'): a warning that `ldd -r` cannot see, counted apart, not as a failure.
let runtimeWarnings = 0;
for (const p of report.problems) {
  if (p.impact === 'feature') runtimeWarnings++;
  else if (p.kind === 'not-found') ours.add(`not-found ${p.library}`);
  else if (p.kind === 'version-not-found') ours.add(`version-not-found ${p.version} ${p.object}`);
  else if (p.kind === 'undefined-symbol') ours.add(`undefined-symbol ${p.symbol}@${p.version} ${p.object}`);
  else oursUnversioned.add(`${p.symbol} ${p.object}`);
}
const falsePositives = [...ours].filter((k) => !lddFailing.has(k));
const missed = [...lddFailing].filter((k) => !ours.has(k));
const unvExtra = [...oursUnversioned].filter((k) => !lddUnversioned.has(k));
const unvMissed = [...lddUnversioned].filter((k) => !oursUnversioned.has(k));

const [cold, coldUnkept, warm, ldd, floor, lookupFloor, lookupFloor2] = results;
const coldSpeedup = ldd.median / cold.median;
const speedup = ldd.median / warm.median;
console.log(`| command | median ms | min ms | max ms |`);
console.log(`| --- | --- | --- | --- |`);
for (const r of results) console.log(`| \`${r.name}\` | ${r.median.toFixed(0)} | ${r.min.toFixed(0)} | ${r.max.toFixed(0)} |`);
console.log(`\n${files.length} shared objects checked (${report.skipped.length} other files skipped, ${linkerScripts} of them linker scripts); ${runs} interleaved runs.`);
console.log(`speed-up, first check (--no-cache): ${coldSpeedup.toFixed(1)}x (target >= 10x): ${coldSpeedup >= 10 ? 'PASS' : 'FAIL'}`);
console.log(`speed-up, unchanged tree (cached): ${speedup.toFixed(1)}x (target >= 10x): ${speedup >= 10 ? 'PASS' : 'FAIL'}; report identical to the uncached one: ${sameReport ? 'yes' : 'NO'}`);
console.log(`the floor (a fresh Node.js process reading the tables only): ${floor.median.toFixed(0)} ms, ${(ldd.median / floor.median).toFixed(1)}x; the first check takes ${(cold.median / floor.median).toFixed(1)}x the floor; the 10x budget is ${(ldd.median / 10).toFixed(0)} ms`);
console.log(`the lookup floor (reading, each file's dependency closure, every reference looked up; no loader rules, no validation, no report): ${lookupFloor.median.toFixed(0)} ms, ${(ldd.median / lookupFloor.median).toFixed(1)}x, ${(100 * lookupFloor.median / (ldd.median / 10)).toFixed(0)}% of the 10x budget; on two threads ${lookupFloor2.median.toFixed(0)} ms; the first check takes ${(cold.median / lookupFloor.median).toFixed(2)}x the lookup floor (target <= 2x): ${cold.median <= 2 * lookupFloor.median ? 'PASS' : 'FAIL'}; without compiled code kept ${(coldUnkept.median / lookupFloor.median).toFixed(2)}x`);
if (cpu) console.log(`CPU time (user+sys, median of 3): check --no-cache ${cpu[0].toFixed(2)} s (${(cpu[2] / cpu[0]).toFixed(1)}x), check cached ${cpu[1].toFixed(2)} s (${(cpu[2] / cpu[1]).toFixed(1)}x), ldd -r loop ${cpu[2].toFixed(2)} s`);
console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
console.log(`failing problems: ldd -r ${lddFailing.size}, cudaenv check ${ours.size}; false positives ${falsePositives.length} (target 0): ${falsePositives.length === 0 ? 'PASS' : 'FAIL'}; missed ${missed.length}`);
console.log(`run-time loads not found (warnings, what a feature of the file loses; ldd -r does not model them): ${runtimeWarnings}`);
console.log(`unversioned undefined symbols (notes): ldd -r ${lddUnversioned.size}, cudaenv check ${oursUnversioned.size}; only ours ${unvExtra.length}, only ldd ${unvMissed.length}`);
for (const k of falsePositives.slice(0, 10)) console.log(`  false positive: ${k}`);
for (const k of missed.slice(0, 10)) console.log(`  missed: ${k}`);
for (const k of unvExtra.slice(0, 5)) console.log(`  unversioned only ours: ${k}`);
for (const k of unvMissed.slice(0, 5)) console.log(`  unversioned only ldd: ${k}`);
process.exitCode = speedup >= 10 && coldSpeedup >= 10 && sameReport && falsePositives.length === 0 ? 0 : 1;
