#!/usr/bin/env node
// A second `cudaenv doctor` on an unchanged machine (issue 42: doctor now checks what the
// environment loads, through check's verdict cache, and must cost no more than before):
// two built trees interleaved, each with its own store warmed by one run, and `node -e 0`.
// Usage: node bench/doctor.mjs OLD_TREE NEW_TREE [RUNS] [LD_LIBRARY_PATH]
//   (OLD_TREE: a copy of bin/, dist/, package.json and node_modules of the commit before)
import {spawnSync} from 'node:child_process';
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join, resolve} from 'node:path';
import {median} from './lib/measure.mjs';

const [oldTree, newTree, runsArg, ld] = process.argv.slice(2);
if (!oldTree || !newTree) {
  console.error('usage: node bench/doctor.mjs OLD_TREE NEW_TREE [RUNS] [LD_LIBRARY_PATH]');
  process.exit(2);
}
const trees = {old: resolve(oldTree), new: resolve(newTree)};
const runs = Number(runsArg ?? 7);
const stores = Object.fromEntries(Object.keys(trees).map((k) => [k, mkdtempSync(join(tmpdir(), `cudaenv-doctor-${k}-`))]));
const env = (k) => ({PATH: process.env.PATH, HOME: process.env.HOME, CUDAENV_DIR: stores[k], ...(ld ? {LD_LIBRARY_PATH: ld} : {})});
const time = (cmd, args, e) => {
  const t = process.hrtime.bigint();
  spawnSync(cmd, args, {env: e, encoding: 'utf8', maxBuffer: 1 << 26});
  return Number(process.hrtime.bigint() - t) / 1e6;
};
const times = {old: [], new: [], node: []};
try {
  for (const k of Object.keys(trees)) time(join(trees[k], 'bin', 'cudaenv'), ['doctor'], env(k));
  for (let i = 0; i < runs; i++) {
    for (const k of i % 2 ? ['new', 'old'] : ['old', 'new']) times[k].push(time(join(trees[k], 'bin', 'cudaenv'), ['doctor'], env(k)));
    times.node.push(time(process.execPath, ['-e', '0'], process.env));
  }
  const m = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
  console.log(`second doctor: old ${m.old.toFixed(0)} ms, new ${m.new.toFixed(0)} ms, new/old ${(m.new / m.old).toFixed(2)}; node -e 0 ${m.node.toFixed(0)} ms (${runs} runs, LD_LIBRARY_PATH=${ld ?? ''})`);
} finally {
  for (const s of Object.values(stores)) rmSync(s, {recursive: true, force: true});
}
