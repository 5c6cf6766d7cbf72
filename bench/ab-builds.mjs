#!/usr/bin/env node
// Two built trees of cudaenv side by side (a change that must not move the figures: issue 35's
// move of the loader model): the first check, the cached check and `--version`, interleaved, in
// stores of their own, and whether the two builds' reports are byte-identical.
// Usage: git worktree add /tmp/old REV && (cd /tmp/old && ln -s "$PWD/node_modules" . && npm run build)
//        node bench/ab-builds.mjs /tmp/old . [RUNS] [DIR...]
import {spawnSync} from 'node:child_process';
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join, resolve} from 'node:path';
import {median} from './lib/measure.mjs';

const [oldTree, newTree, runsArg, ...dirsArg] = process.argv.slice(2);
if (!oldTree || !newTree) {
  console.error('usage: node bench/ab-builds.mjs OLD_TREE NEW_TREE [RUNS] [DIR...]');
  process.exit(2);
}
const trees = {old: resolve(oldTree), new: resolve(newTree)};
const dirs = dirsArg.length > 0 ? dirsArg : ['/usr/lib/x86_64-linux-gnu', '/usr/local/cuda-13.0/lib'];
const runs = Number(runsArg ?? 7);
const stores = Object.fromEntries(Object.keys(trees).map((k) => [k, mkdtempSync(join(tmpdir(), `cudaenv-ab-${k}-`))]));
const cases = {'first check (--no-cache)': ['check', '--no-cache', ...dirs], 'cached check': ['check', ...dirs], '--version': ['--version']};
const times = {};
const outputs = {};
const run = (k, args) => spawnSync(join(trees[k], 'bin', 'cudaenv'), args, {env: {...process.env, CUDAENV_DIR: stores[k]}, encoding: 'utf8', maxBuffer: 1 << 28});
try {
  for (const k of Object.keys(trees)) run(k, cases['cached check']);
  for (let i = 0; i < runs; i++) {
    for (const [name, args] of Object.entries(cases)) {
      // Alternate which build goes first, so that neither always meets the other's leftovers.
      for (const k of i % 2 ? ['new', 'old'] : ['old', 'new']) {
        const t = process.hrtime.bigint();
        const r = run(k, args);
        ((times[name] ??= {})[k] ??= []).push(Number(process.hrtime.bigint() - t) / 1e6);
        if (args[0] === 'check') (outputs[name] ??= {})[k] = r.stdout;
      }
    }
  }
  for (const [name, by] of Object.entries(times)) {
    console.log(`${name}: old ${median(by.old).toFixed(0)} ms, new ${median(by.new).toFixed(0)} ms, new/old ${(median(by.new) / median(by.old)).toFixed(2)} (${runs} runs)`);
  }
  for (const [name, by] of Object.entries(outputs)) console.log(`${name}: reports byte-identical: ${by.old === by.new ? 'yes' : 'NO'}`);
} finally {
  for (const s of Object.values(stores)) rmSync(s, {recursive: true, force: true});
}
