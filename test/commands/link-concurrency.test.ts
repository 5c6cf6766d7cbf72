import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawn} from 'node:child_process';
import {mkdirSync, readlinkSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeStore} from '../core/link/fixtures.js';

let dir: string;
let cleanup: () => void;
beforeAll(() => {
  ({dir, cleanup} = makeTempDir());
});
afterAll(() => cleanup());

function run(argv: string[], env: NodeJS.ProcessEnv): Promise<{code: number | null; out: string; err: string}> {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), {env});
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('exit', (code) => resolve({code, out, err}));
  });
}

test('20 concurrent links with different versions leave a valid link; a reader never sees an error', async () => {
  const labels = Array.from({length: 20}, (_, i) => `12.${i}.0`);
  makeStore(join(dir, 'store'), labels);
  const env = cliEnv(join(dir, 'store'));
  mkdirSync(join(dir, 'local', 'cuda-11.8'), {recursive: true});
  const target = join(dir, 'local', 'cuda');
  symlinkSync(join(dir, 'local', 'cuda-11.8'), target);
  const stop = join(dir, 'stop');
  // The reader: readlink and stat (following the link) in a tight loop, counting failures.
  const reader = run(['bash', '-c', `n=0; bad=0; while [ ! -e "$2" ]; do readlink "$1" >/dev/null || bad=$((bad+1)); stat -L "$1" >/dev/null || bad=$((bad+1)); n=$((n+1)); done; echo "$n $bad"`, 'reader', target, stop], env);
  const results = await Promise.all(labels.map((l) => run([process.execPath, CLI, 'link', l, '--target', target, '--json'], env)));
  writeFileSync(stop, '');
  const [reads, failures] = (await reader).out.trim().split(' ').map(Number);
  for (const r of results) expect({code: r.code, err: r.err}).toEqual({code: 0, err: ''});
  expect(reads).toBeGreaterThan(20);
  expect(failures).toBe(0);
  const final = readlinkSync(target);
  expect(labels.map((l) => join(dir, 'store', 'versions', l))).toContain(final);
  expect(statSync(target).isDirectory()).toBe(true);
  // Every run recorded the same original, whatever the interleaving: unlink restores it.
  for (const r of results) expect(JSON.parse(r.out).restores).toBe(`a link to ${join(dir, 'local', 'cuda-11.8')}`);
  const u = runCli(['unlink', '--target', target], {env});
  expect(u.status).toBe(0);
  expect(readlinkSync(target)).toBe(join(dir, 'local', 'cuda-11.8'));
}, 180000);
