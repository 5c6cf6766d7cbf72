// Issue 34, item 3: the single executable (dist-exe/cudaenv-linux-ARCH, `npm run build:exe`) starts
// no slower than the npm install through its launcher (bin/cudaenv: sh, then Node on bin/run.cjs):
// `--version`, `current` (a project pinned by .cuda-version) and `use 12.4` with its check cached,
// the two side by side in the same interleaved runs, medians; `node -e 0` (the machine's Node.js)
// as the anchor. Also the sizes of the executable, its archive and its wheel.
// Usage: npm run build:exe && node bench/exe.mjs [runs]
import {execFileSync} from 'node:child_process';
import {existsSync, mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync} from 'node:fs';
import {arch, tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {compare} from './lib/measure.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const npmCli = join(root, 'bin', 'cudaenv');
const a = arch() === 'arm64' ? 'arm64' : 'x64';
const exe = join(root, 'dist-exe', `cudaenv-linux-${a}`);
if (!existsSync(exe)) {
  console.error(`bench/exe.mjs: ${exe} is missing: run npm run build:exe first`);
  process.exit(1);
}
const runs = Number(process.argv[2] ?? 30);

const tmp = mkdtempSync(join(tmpdir(), 'cudaenv-exe-bench-'));
const store = join(tmp, 'store');
for (const v of ['12.4.1', '12.2.0']) {
  mkdirSync(join(store, 'versions', v, 'bin'), {recursive: true});
  mkdirSync(join(store, 'versions', v, 'lib64'), {recursive: true});
  writeFileSync(join(store, 'versions', v, 'version.json'), JSON.stringify({cuda: {name: 'CUDA SDK', version: v}}));
}
writeFileSync(join(store, 'global'), '12\n');
const project = join(tmp, 'proj', 'a', 'b');
mkdirSync(project, {recursive: true});
writeFileSync(join(tmp, 'proj', '.cuda-version'), '12.4\n');
// CUDAENV_SHELL: as inside the shell integration, where `use` prints the code its function evaluates.
const env = {PATH: process.env.PATH, HOME: tmp, CUDAENV_DIR: store, CUDAENV_SHELL: 'bash', LANG: 'C.UTF-8'};
const options = {env, cwd: project};
// The check `use` runs, cached by a first run of each.
for (const cli of [npmCli, exe]) execFileSync(cli, ['use', '12.4'], options);

const cases = [{name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'], options}];
for (const [label, args] of [['--version', ['--version']], ['current', ['current']], ['use 12.4 (check cached)', ['use', '12.4']]]) {
  cases.push({name: `npm: bin/cudaenv ${label}`, cmd: npmCli, args, options});
  cases.push({name: `exe: cudaenv-linux-${a} ${label}`, cmd: exe, args, options});
}
const results = compare(cases, {runs});
rmSync(tmp, {recursive: true, force: true});

const anchor = results[0].median;
console.log('| command | median ms | min ms | max ms | ratio to node -e 0 |');
console.log('| --- | --- | --- | --- | --- |');
for (const r of results) console.log(`| \`${r.name}\` | ${r.median.toFixed(1)} | ${r.min.toFixed(1)} | ${r.max.toFixed(1)} | ${(r.median / anchor).toFixed(2)}x |`);
let slower = 0;
for (let i = 1; i < results.length; i += 2) {
  const ratio = results[i + 1].median / results[i].median;
  console.log(`exe / npm, ${results[i].name.replace(/^npm: bin\/cudaenv /, '')}: ${ratio.toFixed(2)}x`);
  if (ratio > 1) slower++;
}
const mib = (f) => `${(statSync(f).size / 2 ** 20).toFixed(1)} MiB`;
const dist = join(root, 'dist-exe');
console.log(`\nsizes: ${readdirSync(dist).filter((f) => f.startsWith('cudaenv')).sort().map((f) => `${f} ${mib(join(dist, f))}`).join('; ')}`);
console.log(`${runs} interleaved runs each; target: exe no slower than npm for each command: ${slower === 0 ? 'PASS' : `FAIL (${slower} slower)`}`);
process.exitCode = slower === 0 ? 0 : 1;
