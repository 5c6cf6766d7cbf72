// Wall-clock timing of whole commands, interleaved so that the anchor and the subject
// see the same machine load. Returns milliseconds.
import {spawnSync} from 'node:child_process';

export function timeOnce(cmd, args, options = {}) {
  const start = process.hrtime.bigint();
  const r = spawnSync(cmd, args, {stdio: 'ignore', ...options});
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== 0 && !options.allowFailure) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}`);
  return ms;
}

export function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Runs every case `runs` times, round-robin, after `warmup` untimed rounds. */
export function compare(cases, {runs = 20, warmup = 3} = {}) {
  const samples = cases.map(() => []);
  for (let round = 0; round < warmup + runs; round++) {
    cases.forEach((c, i) => {
      const ms = timeOnce(c.cmd, c.args, c.options);
      if (round >= warmup) samples[i].push(ms);
    });
  }
  return cases.map((c, i) => ({name: c.name, median: median(samples[i]), min: Math.min(...samples[i]), max: Math.max(...samples[i]), runs}));
}
