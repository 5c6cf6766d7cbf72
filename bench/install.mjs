// Issue 4 / issue 11 speed and memory target: from a loopback mirror, `cudaenv install` of a
// release of four components (~100 MB compressed in all; it fetches and extracts them 4 at
// once) takes at most the wall time of the same four `curl -s URL | xz -dc | tar -x`
// pipelines run *in parallel* (the same concurrency), and the peak memory of its whole process
// tree (the sum over node, the xz and the tar processes at each moment) stays under 250 MB.
// The four pipelines one after another are reported too (the anchor of earlier figures), and so
// is the floor: the cheapest Node.js installer that verifies and can resume (lib/floor-installer.mjs).
// Both against a keep-alive server and one that closes the connection after every response.
// Median of N runs each, the three commands interleaved in rotating order.
// Usage: npm run build && node bench/install.mjs [runs] [MB per component]
// The data is generated in a temp dir (never committed) and removed at the end.
import {execFileSync, spawn} from 'node:child_process';
import {createHash, randomBytes} from 'node:crypto';
import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {median} from './lib/measure.mjs';
import {runMeasured} from './lib/tree-rss.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The command users have on PATH: the launcher (bin/cudaenv).
const cli = join(root, 'bin', 'cudaenv');
const runs = Number(process.argv[2] ?? 5);
const mbPerComponent = Number(process.argv[3] ?? 25);
const label = '12.4.1';
const names = ['cuda_nvcc', 'cuda_cudart', 'libcublas', 'libcufft'];

if (!existsSync('/proc/self/task') || !existsSync('/usr/bin/time')) {
  console.error('bench/install.mjs reads process trees from /proc (Linux only) and CPU time from GNU time (apt-get install time)');
  process.exit(1);
}
const tmp = mkdtempSync(join(tmpdir(), 'cudaenv-bench-install-'));
const mirror = join(tmp, 'mirror');
mkdirSync(mirror);
// Gigabytes of generated data must not outlive the benchmark, however it ends.
let server;
process.on('exit', () => {
  server?.kill();
  rmSync(tmp, {recursive: true, force: true});
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

// Half incompressible bytes (xz stores them), half base64 text (xz really decodes LZMA):
// the compressed size is real, and decompression does real work.
function generate(name, version) {
  const top = `${name}-linux-x86_64-${version}-archive`;
  const src = join(tmp, 'src', top);
  mkdirSync(join(src, 'lib'), {recursive: true});
  mkdirSync(join(src, 'include'), {recursive: true});
  const half = Math.floor(mbPerComponent * 1024 * 1024 / 2);
  writeFileSync(join(src, 'lib', `lib${name}.so.${version}`), randomBytes(half));
  symlinkSync(`lib${name}.so.${version}`, join(src, 'lib', `lib${name}.so.12`));
  symlinkSync(`lib${name}.so.12`, join(src, 'lib', `lib${name}.so`));
  writeFileSync(join(src, 'include', `${name}.h`), randomBytes(Math.floor(half * 0.75)).toString('base64'));
  for (let i = 0; i < 200; i++) writeFileSync(join(src, 'include', `h${i}.h`), `/* header ${i} */\n`.repeat(50));
  const rel = `${name}/linux-x86_64/${top}.tar.xz`;
  mkdirSync(join(mirror, dirname(rel)), {recursive: true});
  execFileSync('sh', ['-c', 'tar -C "$1" -cf - "$2" | xz -1 -T2 -c > "$3"', 'sh', join(tmp, 'src'), top, join(mirror, rel)]);
  rmSync(join(tmp, 'src', top), {recursive: true});
  const bytes = readFileSync(join(mirror, rel));
  return {rel, entry: {name, version, 'linux-x86_64': {relative_path: rel, sha256: createHash('sha256').update(bytes).digest('hex'), size: String(bytes.length)}}};
}

process.stderr.write(`generating 4 components of ~${mbPerComponent} MB in ${tmp}...\n`);
const manifest = {release_date: '2024-04-03', release_label: label, release_product: 'cuda'};
const rels = [];
for (const name of names) {
  const {rel, entry} = generate(name, '12.4.127');
  manifest[name] = entry;
  rels.push(rel);
}
writeFileSync(join(mirror, `redistrib_${label}.json`), JSON.stringify(manifest, null, 2));
writeFileSync(join(mirror, 'index.html'), `<a href="redistrib_${label}.json">redistrib_${label}.json</a>\n`);
const compressed = rels.reduce((s, r) => s + statSync(join(mirror, r)).size, 0);

const servers = [];
async function startServer(mode) {
  const child = spawn(process.execPath, [join(root, 'bench', 'install-serve.mjs'), mirror, ...(mode === 'close' ? ['close'] : [])], {stdio: ['ignore', 'pipe', 'inherit']});
  servers.push(child);
  const port = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
  return `http://127.0.0.1:${port}/`;
}
server = {kill: () => servers.forEach((c) => c.kill())};

const env = {...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`};
delete env.NODE_OPTIONS;
const results = [];
for (const mode of ['keep-alive', 'close']) {
  const url = await startServer(mode);
  const ours = [];
  const parallel = [];
  const sequential = [];
  const floor = [];
  for (let i = 0; i < runs; i++) {
    const store = join(tmp, `store${i}`);
    const outs = [join(tmp, `out-par${i}`), join(tmp, `out-seq${i}`), join(tmp, `out-floor${i}`)];
    for (const o of outs.slice(0, 2)) mkdirSync(o);
    const pipe = (r, out) => `curl -sf ${url}${r} | xz -dc | tar -x -C ${out}`;
    // bash with pipefail: a failed curl or xz fails the command, as a failed install would
    const par = `set -o pipefail; pids=; ${rels.map((r) => `(${pipe(r, outs[0])}) & pids="$pids $!"`).join('; ')}; st=0; for p in $pids; do wait $p || st=1; done; exit $st`;
    const seq = `set -o pipefail; ${rels.map((r) => pipe(r, outs[1])).join(' && ')}`;
    const jobs = [
      async () => ours.push(await runMeasured(cli, ['install', label, '--components', names.join(','), '--mirror', url, '--json'], {env: {...env, CUDAENV_DIR: store}})),
      async () => parallel.push(await runMeasured('bash', ['-c', par], {env})),
      async () => sequential.push(await runMeasured('bash', ['-c', seq], {env})),
      async () => floor.push(await runMeasured(process.execPath, [join(root, 'bench', 'lib', 'floor-installer.mjs'), url, label, outs[2], ...names], {env})),
    ];
    for (let k = 0; k < jobs.length; k++) await jobs[(i + k) % jobs.length]();
    rmSync(store, {recursive: true, force: true});
    for (const o of outs) rmSync(o, {recursive: true, force: true});
  }
  results.push({mode, ours, parallel, sequential, floor});
}
server.kill();
rmSync(tmp, {recursive: true, force: true});

const mib = (kib) => (kib / 1024).toFixed(0);
const row = (name, xs) => `| ${name} | ${median(xs.map((x) => x.ms)).toFixed(0)} | ${Math.min(...xs.map((x) => x.ms)).toFixed(0)} | ${Math.max(...xs.map((x) => x.ms)).toFixed(0)} | ${median(xs.map((x) => x.cpuS)).toFixed(2)} | ${mib(Math.max(...xs.map((x) => x.peakKiB)))} |`;
console.log(`4 components, ${(compressed / 1048576).toFixed(1)} MiB compressed, ${runs} runs each, interleaved; load average before: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
for (const {mode, ours, parallel, sequential, floor} of results) {
  console.log(`\nserver: ${mode === 'close' ? 'Connection: close after every response' : 'keep-alive'}\n`);
  console.log('| command | median ms | min ms | max ms | median CPU s (tree, user+sys) | peak RSS of the process tree MiB |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  console.log(row('4 x `curl -s URL \\| xz -dc \\| tar -x` in parallel', parallel));
  console.log(row('4 x `curl -s URL \\| xz -dc \\| tar -x` one after another', sequential));
  console.log(row('floor: the cheapest Node.js installer that verifies and can resume (bench/lib/floor-installer.mjs)', floor));
  console.log(row('`cudaenv install 12.4.1 --components ...` (cold cache, 4 at once)', ours));
  const m = median(ours.map((x) => x.ms));
  const cpu = (xs) => median(xs.map((x) => x.cpuS));
  console.log(`\nwall ratio cudaenv/parallel anchor: ${(m / median(parallel.map((x) => x.ms))).toFixed(2)} (target <= 1.00); cudaenv/sequential anchor: ${(m / median(sequential.map((x) => x.ms))).toFixed(2)}; CPU ratio cudaenv/parallel anchor: ${(cpu(ours) / cpu(parallel)).toFixed(2)}; peak tree RSS ${mib(Math.max(...ours.map((x) => x.peakKiB)))} MiB (target < 250)`);
  console.log(`floor/parallel anchor: wall ${(median(floor.map((x) => x.ms)) / median(parallel.map((x) => x.ms))).toFixed(2)}, CPU ${(cpu(floor) / cpu(parallel)).toFixed(2)}; cudaenv/floor: wall ${(m / median(floor.map((x) => x.ms))).toFixed(2)}`);
}
