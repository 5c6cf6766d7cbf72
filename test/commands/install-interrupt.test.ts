import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawn, type ChildProcess} from 'node:child_process';
import {randomBytes} from 'node:crypto';
import {existsSync, mkdirSync, readdirSync, statSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, cliEnv} from '../helpers/cli.js';
import {archiveRelPath, realisticRelease, startMirrorServer, writeIndex, writeRelease, type MirrorServer, type ReleaseSpec} from '../helpers/mirror.js';
import {runInPty} from '../helpers/pty.js';
import {have} from '../helpers/capabilities.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';

/**
 * Issue 44 items 1 and 9, as a person meets them: `cudaenv install` on a real pseudo-terminal
 * (the live display) and without one, stopped by Ctrl-C, SIGTERM or the terminal closing while an
 * archive is still arriving and tar is writing its first files; what a SIGKILLed install leaves,
 * seen by `cudaenv cache` and removed by `cudaenv cache clean`; a download slower than 1 KiB/s.
 */

let tmp: {dir: string; cleanup: () => void};
let server: MirrorServer;
let n = 0;
let slowNvcc: string;
const children = new Set<ChildProcess>();

const newStore = (): string => join(tmp.dir, `store${n++}`);
const env = (store: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv =>
  cliEnv(store, {CUDAENV_MIRROR: server.url, CUDAENV_RETRY_DELAY_MS: '20', CUDAENV_SPEED_LIMIT: '0', ...extra});

beforeAll(async () => {
  tmp = makeTempDir('cudaenv-install-interrupt-');
  const root = join(tmp.dir, 'mirror');
  mkdirSync(root);
  // nvcc with 384 KiB that xz cannot shrink: throttled, it arrives over seconds, and tar writes
  // the small files it meets first while the rest is on its way.
  const release: ReleaseSpec = realisticRelease(join(tmp.dir, 'work'), '12.6.3');
  const nvcc = release.components.find((c) => c.name === 'cuda_nvcc')!;
  nvcc.files = {...nvcc.files, 'nvvm/lib64/libnvvm.so.4.0.0': {bytes: randomBytes(384 * 1024)}};
  slowNvcc = archiveRelPath(nvcc);
  writeRelease(root, release);
  writeRelease(root, realisticRelease(join(tmp.dir, 'work'), '12.4.1'));
  writeIndex(root, ['12.4.1', '12.6.3']);
  server = await startMirrorServer(root);
}, 120000);

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await server?.close();
  tmp?.cleanup();
});

async function until(what: string, ok: () => boolean, ms = 30000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const list = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir) : []);

/** The install is downloading (bytes in the .part) and extracting (tar has written files into the stage). */
async function midway(store: string): Promise<void> {
  await until('the download and the extraction to be under way', () => {
    const part = list(join(store, 'cache')).find((f) => f.includes('cuda_nvcc') && f.endsWith('.part'));
    if (!part || statSync(join(store, 'cache', part)).size === 0) return false;
    const stage = list(join(store, 'tmp')).find((d) => d.startsWith('stage-12.6.3-'));
    return stage !== undefined && list(join(store, 'tmp', stage, 'parts', 'cuda_nvcc')).length > 0;
  });
}

/** As the non-terminal case always ended: nothing installed, no stage, no lock, the download kept to resume. */
function expectStoppedCleanly(store: string): void {
  expect(list(join(store, 'versions'))).toEqual([]);
  expect(list(join(store, 'tmp'))).toEqual([]);
  expect(list(join(store, 'locks'))).toEqual([]);
  const part = list(join(store, 'cache')).find((f) => f.includes('cuda_nvcc') && f.endsWith('.part'));
  expect(part).toBeDefined();
  expect(statSync(join(store, 'cache', part!)).size).toBeGreaterThan(0);
}

const EXIT = {SIGHUP: 129, SIGINT: 130, SIGTERM: 143} as const;
type Sig = keyof typeof EXIT;

describeIf(have('python3'), 'needs python3 (its pty module opens the pseudo-terminal)')('stopping an install: every way ends alike (issue 44, item 1)', () => {
  beforeAll(() => {
    server.faults.set(slowNvcc, [{kind: 'throttle', bytesPerSecond: 24000}]);
  });
  afterAll(() => {
    server.faults.delete(slowNvcc);
  });

  // At a terminal: Ctrl-C typed, SIGTERM from elsewhere, the terminal closed (the kernel's SIGHUP).
  test.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as Sig[])('at a terminal, with the live display: %s mid-download and mid-extraction exits 128+N, says so, removes the staging', async (sig) => {
    const store = newStore();
    const run = runInPty([process.execPath, CLI, 'install', '12.6.3', '--profile', 'minimal'], env(store));
    children.add(run.child);
    await midway(store);
    expect(run.output()).toContain('\u001b[?25l'); // the live display is drawn (it hides the cursor)
    if (sig === 'SIGINT') run.ctrlC();
    else if (sig === 'SIGHUP') run.close();
    else run.kill(sig);
    const r = await run.done;
    expect({code: r.code, signal: r.signal}).toEqual({code: EXIT[sig], signal: null});
    // A closed terminal shows nothing more; the others show the message, not listr2's "Interrupted.".
    if (sig !== 'SIGHUP') {
      // eslint-disable-next-line no-control-regex
      expect(r.output.replace(/\u001b\[[0-9;]*m/g, '')).toContain(`cudaenv: interrupted by ${sig}; nothing was installed`);
      expect(r.output).not.toContain('Interrupted.');
      expect(r.output).toContain('\u001b[?25h'); // the cursor is shown again
    }
    expectStoppedCleanly(store);
  }, 60000);

  test.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as Sig[])('without a terminal: %s mid-download and mid-extraction exits 128+N, says so, removes the staging', async (sig) => {
    const store = newStore();
    const child = spawn(process.execPath, [CLI, 'install', '12.6.3', '--profile', 'minimal'], {env: env(store), stdio: ['ignore', 'pipe', 'pipe']});
    children.add(child);
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const done = new Promise<{code: number | null; signal: NodeJS.Signals | null}>((resolve) => child.on('close', (code, signal) => resolve({code, signal})));
    await midway(store);
    child.kill(sig);
    expect(await done).toEqual({code: EXIT[sig], signal: null});
    expect(stderr).toContain(`cudaenv: interrupted by ${sig}; nothing was installed`);
    expectStoppedCleanly(store);
  }, 60000);
});

describe('what a killed install leaves: `cache` shows it, `cache clean` removes it (issue 44, item 1)', () => {
  test('a SIGKILLed install\'s staging is listed with its path and removed; a running install\'s is neither; a stage named after a live process that is no install is a leftover', async () => {
    const store = newStore();
    // A live install, held at its download. (An install that starts removes other versions'
    // leftovers whose lock is free, so the leftovers below are made after it started.)
    const cp2 = join(tmp.dir, `cp${n++}`);
    mkdirSync(cp2);
    writeFileSync(join(cp2, 'download.pause'), '');
    const live = spawn(process.execPath, [CLI, 'install', '12.4.1', '--profile', 'minimal'], {env: env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp2}), stdio: 'ignore'});
    children.add(live);
    const liveDone = new Promise<number | null>((resolve) => live.on('close', resolve));
    await until('the live install to download', () => existsSync(join(cp2, 'download')));
    const running = list(join(store, 'tmp')).find((d) => d.startsWith('stage-12.4.1-'))!;
    expect(running).toBe(`stage-12.4.1-${live.pid}-${running.slice(-6)}`);
    // Killed mid-download: its stage stays (SIGKILL runs nothing).
    const cp = join(tmp.dir, `cp${n++}`);
    mkdirSync(cp);
    writeFileSync(join(cp, 'download.pause'), '');
    const killed = spawn(process.execPath, [CLI, 'install', '12.6.3', '--profile', 'minimal'], {env: env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp}), stdio: 'ignore'});
    children.add(killed);
    await until('the killed install to download', () => existsSync(join(cp, 'download')));
    killed.kill('SIGKILL');
    await new Promise((r) => killed.on('close', r));
    const dead = list(join(store, 'tmp')).find((d) => d.startsWith('stage-12.6.3-'))!;
    expect(dead).toBeDefined();
    // A stage whose name carries the pid of a live process that installs nothing (this test).
    const reused = `stage-12.6.3-${process.pid}-abcdef`;
    mkdirSync(join(store, 'tmp', reused, 'parts'), {recursive: true});
    writeFileSync(join(store, 'tmp', reused, 'parts', 'x'), Buffer.alloc(3000));

    const shown = spawnCli(['cache', '--json'], store);
    const state = JSON.parse((await shown).stdout) as {staging: Array<{path: string; kind: string; version: string; pid: number; bytes: number}>};
    expect(state.staging.map((s) => s.path).sort()).toEqual([join(store, 'tmp', dead), join(store, 'tmp', reused)].sort());
    expect(state.staging.find((s) => s.path.endsWith(reused))).toEqual({path: join(store, 'tmp', reused), kind: 'stage', version: '12.6.3', pid: process.pid, bytes: 3000});
    const human = await spawnCli(['cache'], store);
    expect(human.stdout).toContain('2 staging directories of interrupted installs (');
    expect(human.stdout).toContain(`  ${join(store, 'tmp', dead)} (CUDA 12.6.3, `);
    expect(human.stdout).not.toContain(running);

    // doctor reports them too, with the command that frees them (and not the live install's).
    const doctor = JSON.parse((await spawnCli(['doctor', '--json'], store)).stdout) as {findings: Array<{id: string; severity: string; evidence: string[]; fix: string | null}>};
    const leftover = doctor.findings.find((f) => f.id === 'toolkit.leftover-staging');
    expect(leftover).toMatchObject({severity: 'warning', fix: expect.stringContaining('cudaenv cache clean')});
    expect(leftover!.evidence.map((e) => e.split(':')[0]).sort()).toEqual([join(store, 'tmp', dead), join(store, 'tmp', reused)].sort());

    const clean = await spawnCli(['cache', 'clean', '--partial'], store);
    expect(clean.status).toBe(0);
    expect(clean.stdout).toMatch(/^Removed \d+ files? from the cache and 2 staging directories of interrupted installs, .* freed\.$/m);
    expect(list(join(store, 'tmp'))).toEqual([running]);
    writeFileSync(join(cp2, 'download.go'), '');
    expect(await liveDone).toBe(0);
    expect(list(join(store, 'versions'))).toEqual(['12.4.1']);
    expect(JSON.parse((await spawnCli(['cache', '--json'], store)).stdout).staging).toEqual([]);
    const after = JSON.parse((await spawnCli(['doctor', '--json'], store)).stdout) as {findings: Array<{id: string}>};
    expect(after.findings.map((f) => f.id)).not.toContain('toolkit.leftover-staging');
  }, 120000);

  test('an `old-` copy of a --force killed between its renames is put back by `cache clean`, not deleted', async () => {
    const store = newStore();
    mkdirSync(join(store, 'tmp', 'old-12.4.1-1-abcdef', 'bin'), {recursive: true});
    writeFileSync(join(store, 'tmp', 'old-12.4.1-1-abcdef', 'bin', 'nvcc'), 'x');
    mkdirSync(join(store, 'versions'), {recursive: true});
    const r = await spawnCli(['cache', 'clean'], store);
    expect(r.status).toBe(0);
    expect(r.stderr).toContain(`put ${join(store, 'tmp', 'old-12.4.1-1-abcdef')} back as CUDA 12.4.1`);
    expect(existsSync(join(store, 'versions', '12.4.1', 'bin', 'nvcc'))).toBe(true);
  }, 30000);
});

describeIf(have('python3'), 'needs python3 (its pty module opens the pseudo-terminal)')('progress below 1 KiB/s, at a terminal (issue 44, item 9)', () => {
  test('the live display shows the "Installing ... (total size)" header and a whole number of B/s', async () => {
    const cccl = archiveRelPath(realisticRelease(join(tmp.dir, 'work'), '12.4.1').components.find((c) => c.name === 'cuda_cccl')!);
    server.faults.set(cccl, [{kind: 'throttle', bytesPerSecond: 300}]);
    try {
      const store = newStore();
      const run = runInPty([process.execPath, CLI, 'install', '12.4.1', '--components', 'cuda_cccl'], env(store));
      children.add(run.child);
      const r = await run.done;
      expect(r.code).toBe(0);
      expect(r.output).toContain('\u001b[?25l'); // the live display
      expect(r.output).toMatch(/Installing CUDA 12\.4\.1: cuda_cccl \(\d+ B\)/);
      expect(r.output).toMatch(/cuda_cccl 12\.4\.\d+: download \d+ B\/\d+ B, \d{1,3} B\/s/);
      expect(r.output).not.toMatch(/\d\.\d{2,} B\/s/);
    } finally {
      server.faults.delete(cccl);
    }
  }, 60000);
});

function spawnCli(args: string[], store: string): Promise<{status: number | null; stdout: string; stderr: string}> {
  const child = spawn(process.execPath, [CLI, ...args], {env: env(store), stdio: ['ignore', 'pipe', 'pipe']});
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (status) => resolve({status, stdout, stderr})));
}

