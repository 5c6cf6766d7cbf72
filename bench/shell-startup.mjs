// Issue 13, item 1: what cudaenv's rc line costs a new interactive shell, over the same shell
// without it (median of N, interleaved, same run), in bash, zsh and fish; beside the old line
// (`eval "$(cudaenv init SHELL)"`, which starts Node.js in every shell) and `node -e 0`.
// The store has a global default (12.4) whose check is cached, so the first prompt's
// auto-switch does its real work (resolve, switch, report from the cache). bash and zsh run
// their prompt hook before reading `exit` from stdin; fish emits fish_prompt only at a
// terminal, so its input runs the hook once explicitly (`_cudaenv_hook; exit`).
// Usage: npm run build && node bench/shell-startup.mjs [runs]
import {spawnSync} from 'node:child_process';
import {chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir, loadavg} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {median} from './lib/measure.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(repo, 'bin', 'run.cjs');
const runs = Number(process.argv[2] ?? 20);
const tmp = mkdtempSync(join(tmpdir(), 'cudaenv-startup-'));
const store = join(tmp, 'store');
const bin = join(tmp, 'bin');
mkdirSync(bin);
// `cudaenv` on PATH, as npm installs it (the old line and the fallback call it).
writeFileSync(join(bin, 'cudaenv'), `#!/bin/sh\nexec '${process.execPath}' '${cli}' "$@"\n`);
chmodSync(join(bin, 'cudaenv'), 0o755);
const env = {
  PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`, HOME: join(tmp, 'home'), TERM: 'dumb', CUDAENV_DIR: store, LANG: 'C.UTF-8',
};
const tk = join(tmp, 'tk');
mkdirSync(join(tk, 'bin'), {recursive: true});
mkdirSync(join(tk, 'lib64'));
writeFileSync(join(tk, 'version.json'), '{"cuda": {"version": "12.4.1"}}\n');
const cliRun = (args) => spawnSync(process.execPath, [cli, ...args], {env, encoding: 'utf8'});
cliRun(['add', tk]);
cliRun(['global', '12.4']);

const lines = {
  bash: {start: `. "$CUDAENV_DIR/shell/init.bash" 2>/dev/null || eval "$(cudaenv init bash)"`, eval: 'eval "$(cudaenv init bash)"'},
  zsh: {start: `. "$CUDAENV_DIR/shell/init.zsh" 2>/dev/null || eval "$(cudaenv init zsh)"`, eval: 'eval "$(cudaenv init zsh)"'},
  fish: {start: 'source $CUDAENV_DIR/shell/init.fish 2>/dev/null; or cudaenv init fish | source', eval: 'cudaenv init fish | source'},
};

function setup(shell, variant) {
  const home = join(tmp, `${shell}-${variant}`);
  mkdirSync(home, {recursive: true});
  const line = variant === 'none' ? '' : lines[shell][variant];
  if (shell === 'bash') {
    writeFileSync(join(home, 'rc'), `PS1='$ '\n${line}\n`);
    return {cmd: 'bash', args: ['--rcfile', join(home, 'rc'), '-i'], env: {}, input: 'exit\n'};
  }
  if (shell === 'zsh') {
    writeFileSync(join(home, '.zshrc'), `PS1='$ '\n${line}\n`);
    return {cmd: 'zsh', args: ['-i'], env: {ZDOTDIR: home}, input: 'exit\n'};
  }
  mkdirSync(join(home, 'fish'), {recursive: true});
  writeFileSync(join(home, 'fish', 'config.fish'), `function fish_greeting; end\n${line}\n`);
  return {cmd: 'fish', args: ['-i'], env: {XDG_CONFIG_HOME: home, XDG_DATA_HOME: join(home, 'data')}, input: variant === 'none' ? 'exit\n' : '_cudaenv_hook; exit\n'};
}

function timeShell(c) {
  const file = join(tmp, 'input');
  writeFileSync(file, c.input);
  const fd = openSync(file, 'r');
  try {
    const start = process.hrtime.bigint();
    const r = spawnSync(c.cmd, c.args, {env: {...env, ...c.env}, cwd: tmp, stdio: [fd, 'ignore', 'pipe'], encoding: 'utf8'});
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (r.status !== 0) throw new Error(`${c.cmd} exited ${r.status}: ${r.stderr}`);
    return ms;
  } finally {
    closeSync(fd);
  }
}

/** user+system CPU of a new shell without and with the line, from hyperfine (undefined without it). */
function cpuCost(shell, cases) {
  if (spawnSync('sh', ['-c', 'command -v hyperfine']).status !== 0) return undefined;
  const cmds = ['none', 'start'].map((k) => {
    const c = cases[k];
    const input = join(tmp, `input-${shell}-${k}`);
    writeFileSync(input, c.input);
    const vars = Object.entries(c.env).map(([n, v]) => `${n}='${v}'`).join(' ');
    return `env ${vars} ${c.cmd} ${c.args.map((a) => `'${a}'`).join(' ')} < '${input}' > /dev/null`;
  });
  const json = join(tmp, `hf-${shell}.json`);
  const r = spawnSync('hyperfine', ['--runs', String(runs), '--warmup', '3', '--export-json', json, ...cmds], {env, cwd: tmp, stdio: 'ignore'});
  if (r.status !== 0) return undefined;
  const res = JSON.parse(readFileSync(json, 'utf8')).results;
  return {none: (res[0].user + res[0].system) * 1000, start: (res[1].user + res[1].system) * 1000};
}
const cpu = [];

console.log(`load average at start: ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('| shell | without the line | with the line (start file) | cost of the line | old line `eval "$(cudaenv init ...)"` | its cost | `node -e 0` |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
let worst = 0;
for (const shell of ['bash', 'zsh', 'fish']) {
  if (spawnSync('sh', ['-c', `command -v ${shell}`]).status !== 0) {
    console.log(`| ${shell} | missing, skipped | | | | | |`);
    continue;
  }
  cliRun(['init', shell]); // writes the start file
  const cases = {none: setup(shell, 'none'), start: setup(shell, 'start'), eval: setup(shell, 'eval')};
  const samples = {none: [], start: [], eval: [], node: []};
  for (let i = 0; i < runs + 3; i++) {
    for (const k of ['none', 'start', 'eval']) {
      const ms = timeShell(cases[k]);
      if (i >= 3) samples[k].push(ms);
    }
    const s = process.hrtime.bigint();
    spawnSync(process.execPath, ['-e', '0']);
    if (i >= 3) samples.node.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
  cpu.push([shell, cpuCost(shell, cases)]);
  const cost = m.start - m.none;
  worst = Math.max(worst, cost);
  console.log(`| ${shell} | ${m.none.toFixed(1)} ms | ${m.start.toFixed(1)} ms | **${cost.toFixed(1)} ms** | ${m.eval.toFixed(1)} ms | ${(m.eval - m.none).toFixed(1)} ms | ${m.node.toFixed(1)} ms |`);
}
if (cpu.length > 0 && cpu[0][1]) {
  console.log('\nCPU time (user + system, hyperfine means, the same commands; what load does not inflate):\n');
  console.log('| shell | without the line | with the line | cost of the line |');
  console.log('| --- | --- | --- | --- |');
  for (const [shell, c] of cpu) console.log(`| ${shell} | ${c.none.toFixed(2)} ms | ${c.start.toFixed(2)} ms | **${(c.start - c.none).toFixed(2)} ms** |`);
}
console.log(`\nmedians of ${runs} interleaved runs; load average at end: ${loadavg().map((x) => x.toFixed(1)).join(' ')}; target: the line costs <= 10 ms; worst ${worst.toFixed(1)} ms: ${worst <= 10 ? 'PASS' : 'FAIL'}`);
rmSync(tmp, {recursive: true, force: true});
process.exitCode = worst <= 10 ? 0 : 1;
