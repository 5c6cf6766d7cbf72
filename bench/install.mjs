// Issue 4 speed and memory target: from a loopback mirror, `cudaenv install` of a release of
// four components (~100 MB compressed in all) takes at most the wall time of
// `curl -s URL | xz -dc | tar -x` run for the same archives one after another (median of 5,
// interleaved), and peak RSS stays under 200 MB.
// Usage: npm run build && node bench/install.mjs [runs] [MB per component]
// The data is generated in a temp dir (never committed) and removed at the end.
import {execFileSync, spawn, spawnSync} from 'node:child_process';
import {createHash, randomBytes} from 'node:crypto';
import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {median} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'bin', 'run.js');
const runs = Number(process.argv[2] ?? 5);
const mbPerComponent = Number(process.argv[3] ?? 25);
const label = '12.4.1';
const names = ['cuda_nvcc', 'cuda_cudart', 'libcublas', 'libcufft'];

if (!existsSync('/usr/bin/time')) {
  console.error('bench/install.mjs measures peak memory with GNU time: apt-get install time');
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

server = spawn(process.execPath, [join(root, 'bench', 'install-serve.mjs'), mirror], {stdio: ['ignore', 'pipe', 'inherit']});
const port = await new Promise((resolve) => server.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
const url = `http://127.0.0.1:${port}/`;

/** Wall ms and peak RSS (KiB, the largest of the process and the children it waited for) via GNU time. */
function timed(args, env) {
  const start = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%M', ...args], {env, encoding: 'utf8'});
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed: ${r.stderr}`);
  return {ms, rssKiB: Number(r.stderr.trim().split('\n').pop())};
}

const env = {...process.env};
delete env.NODE_OPTIONS;
const ours = [];
const anchor = [];
for (let i = 0; i < runs; i++) {
  const store = join(tmp, `store${i}`);
  const out = join(tmp, `out${i}`);
  mkdirSync(out);
  const pipeline = rels.map((r) => `curl -s ${url}${r} | xz -dc | tar -x -C ${out}`).join(' && ');
  const a = () => anchor.push(timed(['sh', '-c', pipeline], env));
  const b = () => ours.push(timed([process.execPath, cli, 'install', label, '--components', names.join(','), '--mirror', url, '--json'], {...env, CUDAENV_DIR: store}));
  if (i % 2) {
    a();
    b();
  } else {
    b();
    a();
  }
  rmSync(store, {recursive: true, force: true});
  rmSync(out, {recursive: true, force: true});
}
server.kill();
rmSync(tmp, {recursive: true, force: true});

const row = (name, xs) => `| ${name} | ${median(xs.map((x) => x.ms)).toFixed(0)} | ${Math.min(...xs.map((x) => x.ms)).toFixed(0)} | ${Math.max(...xs.map((x) => x.ms)).toFixed(0)} | ${(Math.max(...xs.map((x) => x.rssKiB)) / 1024).toFixed(0)} |`;
console.log(`4 components, ${(compressed / 1048576).toFixed(1)} MiB compressed, ${runs} runs each, interleaved\n`);
console.log('| command | median ms | min ms | max ms | peak RSS MiB |');
console.log('| --- | --- | --- | --- | --- |');
console.log(row('`curl -s URL \\| xz -dc \\| tar -x`, 4 archives one after another', anchor));
console.log(row('`cudaenv install 12.4.1 --components ...` (cold cache)', ours));
const ratio = median(ours.map((x) => x.ms)) / median(anchor.map((x) => x.ms));
console.log(`\nratio cudaenv/anchor: ${ratio.toFixed(2)} (target <= 1.00); peak RSS ${(Math.max(...ours.map((x) => x.rssKiB)) / 1024).toFixed(0)} MiB (target < 200)`);
