// Issue 3 memory target: peak RSS under 150 MB while `cudaenv check` checks a directory that holds a
// 1 GB shared object (a real library padded with `truncate`, the way libtorch_cuda.so is mostly
// device code the loader never reads). Anchors in the same run: `node -e 0`, and the same check on
// the library unpadded. Usage: npm run build && node bench/check-memory.mjs [library]
import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdtempSync, mkdirSync, rmSync, statSync, truncateSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'bin', 'run.cjs');
const candidates = [process.argv[2], '/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1', '/usr/lib/x86_64-linux-gnu/libstdc++.so.6'].filter(Boolean);
const source = candidates.find((p) => existsSync(p));
if (!source || !existsSync('/usr/bin/time')) {
  console.error('needs a real shared library and GNU time (/usr/bin/time)');
  process.exit(2);
}
const GB = 1024 ** 3;
const env = {...process.env};
delete env.NODE_OPTIONS;
delete env.LD_LIBRARY_PATH;

/** Peak RSS in MB of one command, from GNU time's %M (KB). */
function peakMb(cmd, args) {
  const r = spawnSync('/usr/bin/time', ['-f', '@@%M', cmd, ...args], {env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024});
  const m = /@@(\d+)\s*$/.exec(r.stderr);
  if (!m) throw new Error(`no peak RSS from ${cmd}: ${r.stderr}`);
  return {mb: Number(m[1]) / 1024, status: r.status, tail: r.stdout.trim().split('\n').pop()};
}

const tmp = mkdtempSync(join(tmpdir(), 'cudaenv-bench-mem-'));
try {
  const small = join(tmp, 'small');
  const big = join(tmp, 'big');
  mkdirSync(small);
  mkdirSync(big);
  copyFileSync(source, join(small, 'libbig.so'));
  copyFileSync(source, join(big, 'libbig.so'));
  // Zeros after the last section: a valid ELF file whose headers and tables are all near the start.
  truncateSync(join(big, 'libbig.so'), GB);
  const size = statSync(join(big, 'libbig.so')).size;

  const rows = [];
  for (let i = 0; i < 3; i++) {
    rows.push(['node -e 0', peakMb(process.execPath, ['-e', '0'])]);
    rows.push([`cudaenv check (${(statSync(join(small, 'libbig.so')).size / 2 ** 20).toFixed(0)} MB original)`, peakMb(process.execPath, [cli, 'check', small])]);
    rows.push([`cudaenv check (padded to ${(size / GB).toFixed(2)} GB)`, peakMb(process.execPath, [cli, 'check', big])]);
  }
  const byName = new Map();
  for (const [name, r] of rows) byName.set(name, [...(byName.get(name) ?? []), r]);
  console.log(`library: ${source}\n`);
  console.log('| command | peak RSS MB (max of 3) | exit | last line |');
  console.log('| --- | --- | --- | --- |');
  let padded = 0;
  for (const [name, rs] of byName) {
    const max = Math.max(...rs.map((r) => r.mb));
    if (name.includes('padded')) padded = max;
    console.log(`| \`${name}\` | ${max.toFixed(1)} | ${rs[0].status} | ${name.startsWith('node') ? '' : rs[0].tail} |`);
  }
  console.log(`\ntarget < 150 MB with the 1 GB file: ${padded.toFixed(1)} MB: ${padded < 150 ? 'PASS' : 'FAIL'}`);
  process.exitCode = padded < 150 ? 0 : 1;
} finally {
  rmSync(tmp, {recursive: true, force: true});
}
