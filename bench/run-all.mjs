// Runs every benchmark in turn, as recorded in bench/RESULTS.md (build first: npm run build).
// They need the Debian tools .ci/run installs, plus direnv, hyperfine and GNU time (`time`).
// Usage: npm run bench
import {spawnSync} from 'node:child_process';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const benches = [
  [process.execPath, ['startup.mjs', '20']],
  [process.execPath, ['check-scale.mjs', '5']],
  [process.execPath, ['check-memory.mjs']],
  [process.execPath, ['install.mjs', '5', '25']],
  [process.execPath, ['action.mjs', '3']],
  ['bash', ['shell-hook.sh', '1000']],
  ['bash', ['shell-cd.sh', '200']],
  ['bash', ['shell-shim.sh', '300']],
  [process.execPath, ['shell-startup.mjs', '20']],
  [process.execPath, ['use.mjs', '20']],
];
let failed = 0;
for (const [cmd, args] of benches) {
  process.stdout.write(`\n### ${args.join(' ')}\n`);
  const r = spawnSync(cmd, [join(here, args[0]), ...args.slice(1)], {stdio: 'inherit'});
  if (r.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
