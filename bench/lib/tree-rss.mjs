// Peak memory of a whole process tree: the sum of the resident sets of a process and all its
// descendants at each moment, sampled, and the largest such sum. (GNU time's %M is the
// largest *single* process, which hides N children running at once.)
import {spawn} from 'node:child_process';
import {readFileSync, readdirSync} from 'node:fs';

const PAGE_KIB = 4;

function rssKiB(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE_KIB;
  } catch {
    return 0; // exited between the listing and the read
  }
}

function children(pid) {
  const out = [];
  let tasks = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ')) if (c.trim()) out.push(Number(c));
    } catch {
      // gone
    }
  }
  return out;
}

/** Sum of RSS (KiB) of `pid` and its descendants now. */
export function treeRssKiB(pid) {
  let sum = 0;
  const todo = [pid];
  const seen = new Set();
  while (todo.length) {
    const p = todo.pop();
    if (seen.has(p)) continue;
    seen.add(p);
    sum += rssKiB(p);
    todo.push(...children(p));
  }
  return sum;
}

/**
 * Runs `cmd args` under GNU time, sampling the tree's summed RSS every `everyMs`. Resolves to
 * wall ms, the peak summed RSS (KiB) and the CPU seconds (user + system) of the whole tree,
 * which the load of other work on the machine barely changes; rejects when the command fails.
 */
export function runMeasured(cmd, args, {env, everyMs = 10} = {}) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn('/usr/bin/time', ['-f', 'CPU %U %S', cmd, ...args], {env, stdio: ['ignore', 'ignore', 'pipe']});
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr = (stderr + d).slice(-4000);
    });
    let peak = 0;
    const sample = () => {
      peak = Math.max(peak, treeRssKiB(child.pid));
    };
    const timer = setInterval(sample, everyMs);
    sample();
    child.on('close', (code) => {
      clearInterval(timer);
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (code !== 0) reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${stderr}`));
      else {
        const m = /CPU ([\d.]+) ([\d.]+)\s*$/.exec(stderr);
        resolve({ms, peakKiB: peak, cpuS: m ? Number(m[1]) + Number(m[2]) : NaN});
      }
    });
  });
}
