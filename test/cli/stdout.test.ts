/**
 * writeStdout (src/cli/stdout.ts), what `use` prints its shell code with: every byte through a real
 * pipe, a non-blocking one whose reader is slow (EAGAIN: the rest goes through process.stdout),
 * and one whose reader is gone (EPIPE: nothing to tell, exit 0). The pipes are made by python3,
 * which can set O_NONBLOCK on a descriptor before handing it to the child (Node cannot).
 */
import {expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {join} from 'node:path';
import {pathToFileURL} from 'node:url';
import {PYTHON_EXE} from '../helpers/capabilities.js';
import {REPO_ROOT} from '../helpers/cli.js';
import {testIf} from '../helpers/skip.js';

const MODULE = pathToFileURL(join(REPO_ROOT, 'dist', 'cli', 'stdout.js')).href;
// 1 MiB of numbered lines with multi-byte characters: far more than a pipe holds (64 KiB).
const CHILD = `import {writeStdout} from ${JSON.stringify(MODULE)};
let text = ''; for (let i = 0; text.length < 1 << 20; i++) text += 'line ' + i + ' é ✓\\n';
writeStdout(text);
process.stderr.write('wrote ' + Buffer.byteLength(text) + '\\n');`;

/** Runs the child with its stdout on a pipe python3 makes: `mode` says how the pipe behaves. */
function throughPipe(mode: 'blocking' | 'nonblocking-slow' | 'closed'): {status: number; read: string; stderr: string; nonblocking: boolean} {
  const script = `
import json, os, subprocess, sys, time
r, w = os.pipe()
if sys.argv[1] != 'blocking':
    os.set_blocking(w, False)
nonblocking = not os.get_blocking(w)
if sys.argv[1] == 'closed':
    os.close(r)
child = subprocess.Popen([sys.argv[2], '--input-type=module', '-e', sys.argv[3]], stdout=w, stderr=subprocess.PIPE)
os.close(w)
data = b''
if sys.argv[1] != 'closed':
    if sys.argv[1] == 'nonblocking-slow':
        time.sleep(0.5)  # the child fills the pipe and meets EAGAIN
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
err = child.stderr.read().decode()
status = child.wait()
print(json.dumps({'status': status, 'read': data.decode(), 'stderr': err, 'nonblocking': nonblocking}))
`;
  const r = spawnSync(PYTHON_EXE!, ['-c', script, mode, process.execPath, CHILD], {encoding: 'utf8', maxBuffer: 64 << 20, timeout: 60000});
  if (r.status !== 0) throw new Error(`python3 failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as {status: number; read: string; stderr: string; nonblocking: boolean};
}

function expected(): string {
  let text = '';
  for (let i = 0; text.length < 1 << 20; i++) text += `line ${i} é ✓\n`;
  return text;
}

const t = testIf(PYTHON_EXE !== null, 'needs python3 (apt-get install python3)');

t('a blocking pipe gets every byte', () => {
  const r = throughPipe('blocking');
  expect(r.nonblocking).toBe(false);
  expect(r.stderr).toBe(`wrote ${Buffer.byteLength(expected())}\n`);
  expect(r.status).toBe(0);
  expect(r.read === expected()).toBe(true);
}, 60000);

t('a non-blocking pipe with a slow reader gets every byte, in order (EAGAIN, then process.stdout)', () => {
  const r = throughPipe('nonblocking-slow');
  expect(r.nonblocking).toBe(true);
  expect(r.stderr).toBe(`wrote ${Buffer.byteLength(expected())}\n`);
  expect(r.status).toBe(0);
  expect(r.read.length).toBe(expected().length);
  expect(r.read === expected()).toBe(true);
}, 60000);

t('a pipe nobody reads any more (EPIPE) is not an error', () => {
  const r = throughPipe('closed');
  expect(r.stderr).toBe(`wrote ${Buffer.byteLength(expected())}\n`);
  expect(r.status).toBe(0);
}, 60000);

test('colour is asked of process.stdout only where stdout may be a terminal: a pipe or a file creates no stream', () => {
  const child = `import {stdoutColorEnabled} from ${JSON.stringify(MODULE)};
import {writeSync} from 'node:fs';
const color = stdoutColorEnabled({TERM: 'xterm'});
// Read before anything touches process.stderr (a pipe too: it would load net itself).
writeSync(2, JSON.stringify({color, net: process.moduleLoadList.includes('NativeModule net')}));`;
  const run = (stdout: 'pipe' | 'ignore' | number) => JSON.parse(spawnSync(process.execPath, ['--input-type=module', '-e', child], {stdio: ['ignore', stdout, 'pipe'], encoding: 'utf8'}).stderr) as {color: boolean; net: boolean};
  // A pipe: no colour, and no net.Socket made to find that out.
  expect(run('pipe')).toEqual({color: false, net: false});
  // /dev/null is a character device: asked (no terminal, so no colour).
  expect(run('ignore').color).toBe(false);
});
