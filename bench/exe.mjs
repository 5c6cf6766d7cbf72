// Issue 34, item 3: the single executable (dist-exe/cudaenv-linux-ARCH, `npm run build:exe`) starts
// no slower than the npm install through its launcher (bin/cudaenv: sh, then Node on bin/run.cjs):
// `--version`, `current` (a project pinned by .cuda-version) and `use 12.4` with its check cached,
// side by side in the same interleaved runs, medians; `node -e 0` (the machine's Node.js) as the
// anchor. The npm install runs on whatever `node` is on PATH: the machine's, and each pinned line
// (scripts/pinned-node.mjs TESTED_LINES, x64 only; --no-lines skips them), the executable's own
// (NODE_EXE) among them, so the start of the Node.js line is told apart from the executable's.
// Also the sizes of the executable, its archive and its wheel.
// Usage: npm run build:exe && node bench/exe.mjs [runs] [--no-lines]
import {execFileSync} from 'node:child_process';
import {existsSync, mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {arch, tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {compare} from './lib/measure.mjs';
import {NODE_EXE, pinnedNode, TESTED_LINES} from '../scripts/pinned-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const npmCli = join(root, 'bin', 'cudaenv');
const a = arch() === 'arm64' ? 'arm64' : 'x64';
const exe = join(root, 'dist-exe', `cudaenv-linux-${a}`);
if (!existsSync(exe)) {
  console.error(`bench/exe.mjs: ${exe} is missing: run npm run build:exe first`);
  process.exit(1);
}
const args = process.argv.slice(2);
const runs = Number(args.find((x) => /^\d+$/.test(x)) ?? 30);
const withLines = a === 'x64' && !args.includes('--no-lines');

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
// The npm install on each pinned line: bin/cudaenv starts the `node` first on PATH.
const lines = [{label: `node ${process.versions.node} (the machine's)`, options}];
if (withLines) {
  for (const version of TESTED_LINES) {
    const bin = join(tmp, `node-${version}`);
    mkdirSync(bin);
    symlinkSync(pinnedNode(version, a, join(root, 'test', 'fixtures', 'downloaded', 'node'), (m) => console.error(m)), join(bin, 'node'));
    lines.push({label: `node ${version}${version === NODE_EXE ? ' (the executable\'s)' : ''}`, options: {cwd: project, env: {...env, PATH: `${bin}:${env.PATH}`}}});
  }
}
// The check `use` runs, cached by a first run of each.
for (const line of lines) execFileSync(npmCli, ['use', '12.4'], line.options);
execFileSync(exe, ['use', '12.4'], options);

const commands = [['--version', ['--version']], ['current', ['current']], ['use 12.4 (check cached)', ['use', '12.4']]];
const cases = [{name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'], options}];
for (const [label, args] of commands) {
  cases.push({name: `exe: cudaenv-linux-${a} ${label}`, cmd: exe, args, options, label});
  for (const line of lines) cases.push({name: `npm on ${line.label}: bin/cudaenv ${label}`, cmd: npmCli, args, options: line.options, label, line: line.label});
}
const results = compare(cases, {runs}).map((r, i) => ({...r, ...cases[i]}));
rmSync(tmp, {recursive: true, force: true});

const anchor = results[0].median;
console.log('| command | median ms | min ms | max ms | ratio to node -e 0 |');
console.log('| --- | --- | --- | --- | --- |');
for (const r of results) console.log(`| \`${r.name}\` | ${r.median.toFixed(1)} | ${r.min.toFixed(1)} | ${r.max.toFixed(1)} | ${(r.median / anchor).toFixed(2)}x |`);
// The target: no slower than the npm install on the Node.js lines people run (TESTED_LINES, the
// executable's own among them); without them, on the machine's. A line older than those (Node 20 here,
// end of life 2026-04-30) is shown beside: its smaller V8 starts faster than any newer line's, which
// an executable built on a maintained line cannot match.
const targets = withLines ? lines.slice(1) : lines;
let slower = 0;
for (const [label] of commands) {
  const mine = results.find((r) => r.label === label && r.cmd === exe);
  const ratios = results.filter((r) => r.label === label && r.line).map((r) => `${r.line} ${(mine.median / r.median).toFixed(2)}x`);
  console.log(`exe / npm, ${label}: ${ratios.join(', ')}`);
  for (const line of targets) if (mine.median > results.find((r) => r.label === label && r.line === line.label).median) slower++;
}
const mib = (f) => `${(statSync(f).size / 2 ** 20).toFixed(1)} MiB`;
const dist = join(root, 'dist-exe');
console.log(`\nsizes: ${readdirSync(dist).filter((f) => f.startsWith('cudaenv')).sort().map((f) => `${f} ${mib(join(dist, f))}`).join('; ')}`);
console.log(`${runs} interleaved runs each; target: exe no slower than the npm install on ${targets.map((l) => l.label).join(', ')}, for each command: ${slower === 0 ? 'PASS' : `FAIL (${slower} slower)`}`);
process.exitCode = slower === 0 ? 0 : 1;
