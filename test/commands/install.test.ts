import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawn, spawnSync, type ChildProcess} from 'node:child_process';
import {existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, statSync, writeFileSync} from 'node:fs';
import {hostname} from 'node:os';
import {join} from 'node:path';
import {CLI, cliEnv} from '../helpers/cli.js';
import {realisticRelease, startMirrorServer, writeIndex, writeRelease, type MirrorServer} from '../helpers/mirror.js';
import {makeTempDir} from '../helpers/tmp.js';
import {testIf} from '../helpers/skip.js';
import {quoteSh} from '../../src/core/text/quote.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';

let tmp: {dir: string; cleanup: () => void};
let server: MirrorServer;
let cudnnServer: MirrorServer;
let n = 0;

function newStore(): string {
  return join(tmp.dir, `store${n++}`);
}

function env(store: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return cliEnv(store, {CUDAENV_MIRROR: server.url, CUDAENV_CUDNN_MIRROR: cudnnServer.url, CUDAENV_RETRY_DELAY_MS: '20', ...extra});
}

/** Nothing half-done: listed versions are complete, no staging left in versions/, no unverified file in cache/ under a final name. */
function checkStore(store: string): string[] {
  const versions = existsSync(join(store, 'versions')) ? readdirSync(join(store, 'versions')) : [];
  for (const v of versions) expect(existsSync(join(store, 'versions', v, '.cudaenv-receipt.json'))).toBe(true);
  const cache = existsSync(join(store, 'cache')) ? readdirSync(join(store, 'cache')) : [];
  for (const name of cache.filter((f) => f.endsWith('.tar.xz'))) {
    // a cache file is whole: xz can test it
    expect(spawnSync('xz', ['-t', join(store, 'cache', name)]).status).toBe(0);
  }
  return versions;
}

const children = new Set<ChildProcess>();

function startCli(args: string[], e: NodeJS.ProcessEnv, cwd?: string): {child: ChildProcess; done: Promise<{code: number | null; signal: string | null; stdout: string; stderr: string}>} {
  const child = spawn(process.execPath, [CLI, ...args], {env: e, cwd, stdio: ['ignore', 'pipe', 'pipe']});
  children.add(child);
  child.on('close', () => children.delete(child));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<{code: number | null; signal: string | null; stdout: string; stderr: string}>((resolve) => {
    child.on('close', (code, signal) => resolve({code, signal, stdout, stderr}));
  });
  return {child, done};
}

/** Runs the built CLI without blocking this process (the loopback mirror answers from here). */
async function runCli(args: string[], options: {env: NodeJS.ProcessEnv; cwd?: string}): Promise<{status: number; stdout: string; stderr: string}> {
  const {done} = startCli(args, options.env, options.cwd);
  const r = await done;
  return {status: r.code ?? 128, stdout: r.stdout, stderr: r.stderr};
}

async function waitFor(path: string, ms = 30000): Promise<void> {
  const end = Date.now() + ms;
  while (!existsSync(path)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${path}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  tmp = makeTempDir('cudaenv-cli-install-');
  const root = join(tmp.dir, 'mirror');
  mkdirSync(root);
  for (const label of ['12.4.1', '12.6.3']) writeRelease(root, realisticRelease(join(tmp.dir, 'work'), label));
  writeIndex(root, ['12.4.1', '12.6.3']);
  server = await startMirrorServer(root);
  // cuDNN: 9.1.0 has cuda11+cuda12 builds, 9.2.0 only cuda11 -> `--cudnn 9` for CUDA 12 must pick 9.1.0
  const croot = join(tmp.dir, 'cudnn');
  mkdirSync(croot);
  const lib = (v: string) => ({'LICENSE': 'cudnn\n', [`lib/libcudnn.so.${v}`]: 'cudnn', 'lib/libcudnn.so.9': {symlink: `libcudnn.so.${v}`}, 'include/cudnn.h': `#define CUDNN_VERSION ${v}\n`});
  writeRelease(croot, {label: '9.1.0', product: 'cudnn', components: [
    {name: 'cudnn', version: '9.1.0.70', variant: 'cuda11', files: lib('9.1.0.70')},
    {name: 'cudnn', version: '9.1.0.70', variant: 'cuda12', files: lib('9.1.0.70')},
  ]});
  writeRelease(croot, {label: '9.2.0', product: 'cudnn', components: [{name: 'cudnn', version: '9.2.0.82', variant: 'cuda11', files: lib('9.2.0.82')}]});
  writeIndex(croot, ['9.1.0', '9.2.0']);
  cudnnServer = await startMirrorServer(croot);
}, 120000);

/** A checkpoint directory where the installer stops at `pauseAt`. */
function checkpoints(name: string, pauseAt: string[]): string {
  const cp = join(tmp.dir, `cp-${name}-${n++}`);
  mkdirSync(cp);
  for (const p of pauseAt) writeFileSync(join(cp, `${p}.pause`), '');
  return cp;
}

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await server?.close();
  await cudnnServer?.close();
  tmp?.cleanup();
});

describe('cudaenv ls-remote / install / uninstall', () => {
  test('ls-remote lists releases newest last, marks installed ones; install --json prints only the result', async () => {
    const store = newStore();
    const r = await runCli(['install', '12.4', '--profile', 'minimal', '--json'], {env: env(store)});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({version: '12.4.1', status: 'installed', platform: 'linux-x86_64', mirror: server.url});
    // This mirror's releases have the minimal profile's parts, not all of devel's (the default).
    const ls = await runCli(['ls-remote', '--profile', 'minimal'], {env: env(store)});
    expect(ls.stdout.trim().split('\n')).toEqual(['* 12.4.1', '  12.6.3']);
    const json = JSON.parse((await runCli(['ls-remote', '12.6', '--profile', 'minimal', '--json'], {env: env(store)})).stdout);
    expect(json.releases).toEqual([{version: '12.6.3', installed: false, installable: true, platform: 'linux-x86_64'}]);
    const bad = await runCli(['ls-remote', 'x; rm'], {env: env(store)});
    expect(bad.status).toBe(2);
    // A prefix nothing matches is an empty answer; a mirror that lists nothing at all is set wrong.
    const none = await runCli(['ls-remote', '14'], {env: env(store)});
    expect([none.status, none.stdout]).toEqual([0, `${server.url} offers no release matching 14.\n`]);
    const empty = join(tmp.dir, 'empty-mirror');
    mkdirSync(empty, {recursive: true});
    const nothing = await runCli(['ls-remote', '--mirror', empty], {env: env(store)});
    expect(nothing.status).toBe(1);
    expect(nothing.stderr).toBe(`cudaenv: the mirror ${empty} offers no CUDA release\nIts index lists no redistrib_*.json at all: check --mirror (or CUDAENV_MIRROR, the mirror setting).\n`);
  });

  test('plain progress lines when not a terminal; --mirror beats CUDAENV_MIRROR', async () => {
    const store = newStore();
    const r = await runCli(['install', '12.6.3', '--profile', 'minimal', '--mirror', server.url], {env: env(store, {CUDAENV_MIRROR: 'http://127.0.0.1:9/'})});
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/Installing CUDA 12\.6\.3: cuda_cccl, cuda_cudart, cuda_nvcc/);
    expect(r.stderr).toMatch(/cuda_nvcc 12\.6\.\d+: download/);
    expect(r.stderr).toMatch(/cuda_nvcc 12\.6\.\d+: done/);
    expect(r.stdout).toMatch(/Installed CUDA 12\.6\.3 in /);
  });

  test('a manifest\'s version with terminal escapes reaches the terminal escaped (issue 46)', async () => {
    const root = join(tmp.dir, 'hostile-text');
    mkdirSync(root);
    const manifest = writeRelease(root, {label: '12.4.1', components: [{name: 'cuda_cudart', version: '12.4.127', files: {'lib/libcudart.so.12': 'x'}}]});
    (manifest.cuda_cudart as Record<string, unknown>).version = '12.4.127\u001b[2J\u001b]0;owned\u0007\u009b31m';
    writeFileSync(join(root, 'redistrib_12.4.1.json'), JSON.stringify(manifest));
    writeIndex(root, ['12.4.1']);
    const hostile = await startMirrorServer(root);
    try {
      const r = await runCli(['install', '12.4.1', '--components', 'cuda_cudart'], {env: env(newStore(), {CUDAENV_MIRROR: hostile.url})});
      expect(r.status).toBe(0);
      expect(r.stderr).toContain('cuda_cudart 12.4.127\\x1b[2J\\x1b]0;owned\\x07\\x9b31m: done');
      // eslint-disable-next-line no-control-regex
      expect(r.stdout + r.stderr).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
    } finally {
      await hostile.close();
    }
  });

  // A real pseudo-terminal (util-linux script): what a person at a terminal sees.
  const haveScript = spawnSync('script', ['-qec', 'true', '/dev/null']).status === 0;
  testIf(haveScript, 'needs script (util-linux) for a pseudo-terminal')('at a terminal: live lines; a terminal without a size, or stdout redirected: plain lines on stderr, only the result in the file', async () => {
    const inPty = async (name: string, setup: string, redirect = ''): Promise<string> => {
      const log = join(tmp.dir, `${name}.pty`);
      const cmd = `${setup}${quoteSh(process.execPath)} ${quoteSh(CLI)} install 12.6.3 --profile minimal${redirect}`;
      const child = spawn('script', ['-qec', cmd, log], {env: env(newStore()), stdio: 'ignore'});
      children.add(child);
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code).toBe(0);
      return readFileSync(log, 'utf8');
    };
    // A pty opened without a size reports 0 columns: wrapped to that, each character was a line of its own.
    const unsized = await inPty('unsized', '');
    expect(unsized).toMatch(/cuda_nvcc 12\.6\.\d+: done/);
    expect(unsized.split(/\r?\n/).filter((l) => l.trim().length === 1)).toEqual([]);
    expect(unsized).not.toContain('\u001b[?25l'); // no live display (it hides the cursor)
    // stdout to a file: progress stays on the terminal, the file holds only the result.
    const file = join(tmp.dir, 'install-stdout.txt');
    const redirected = await inPty('redirected', 'stty cols 100 rows 30; ', ` > ${quoteSh(file)}`);
    expect(redirected).toMatch(/cuda_nvcc 12\.6\.\d+: done/);
    expect(readFileSync(file, 'utf8')).toMatch(/^Installed CUDA 12\.6\.3 in .*\n/);
    expect(readFileSync(file, 'utf8')).not.toMatch(/cuda_nvcc/);
    // A terminal with a size: the live display.
    const live = await inPty('live', 'stty cols 100 rows 30; ');
    expect(live).toContain('\u001b[?25l');
    expect(live).toMatch(/\u2714.* cuda_nvcc 12\.6\.\d+: done/);
  }, 60000);

  test('without SPEC: what the nearest .cuda-version pins (its alias followed, its cudnn= setting), or a clear refusal', async () => {
    const store = newStore();
    const proj = join(tmp.dir, 'pinned-project');
    mkdirSync(join(proj, 'src'), {recursive: true});
    writeFileSync(join(proj, '.cuda-version'), '# the project builds with\nstable\ncudnn=9\n');
    // No alias yet: the file names something this store cannot tell the release of.
    const noAlias = await runCli(['install', '--profile', 'minimal'], {env: env(store), cwd: join(proj, 'src')});
    expect(noAlias.status).toBe(2);
    expect(noAlias.stderr).toBe(`cudaenv: ${join(proj, '.cuda-version')} names stable, and there is no alias stable to say which release that is\nList versions with \`cudaenv ls\`, or create the alias: cudaenv alias stable 12.4\n`);
    expect((await runCli(['alias', 'stable', '12.4'], {env: env(store)})).status).toBe(0);
    const r = await runCli(['install', '--profile', 'minimal'], {env: env(store), cwd: join(proj, 'src')});
    expect(r.stderr.split('\n')[0]).toBe(`cudaenv: installing 12.4 (stable -> 12.4) with cuDNN 9, as ${join(proj, '.cuda-version')} pins it`);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Installed CUDA 12.4.1 with cuDNN 9.1.0.70 in ');
    expect(JSON.parse(readFileSync(join(store, 'versions', '12.4.1', '.cudaenv-receipt.json'), 'utf8')).cudnn).toMatchObject({release: '9.1.0'});
    // --json prints only the result; a --cudnn on the command line is used instead of the file's.
    const store2 = newStore();
    writeFileSync(join(proj, '.cuda-version'), '12.6\ncudnn=8\n');
    const json = await runCli(['install', '--profile', 'minimal', '--cudnn', '9', '--json'], {env: env(store2), cwd: proj});
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toMatchObject({version: '12.6.3', status: 'installed', cudnn: '9.1.0.70'});
    // Nothing to install: no file, or a file that selects the system toolkit.
    const bare = join(tmp.dir, 'no-project');
    mkdirSync(bare, {recursive: true});
    const none = await runCli(['install'], {env: env(newStore()), cwd: bare});
    expect(none.status).toBe(2);
    expect(none.stderr).toContain(`no release to install: no SPEC given, and no .cuda-version in ${bare} or above it`);
    writeFileSync(join(bare, '.cuda-version'), 'system\n');
    const system = await runCli(['install'], {env: env(newStore()), cwd: bare});
    expect(system.status).toBe(2);
    expect(system.stderr).toContain('selects the system toolkit (system): there is nothing to install');
  });

  test('--cudnn 9 installs the newest cuDNN 9 built for the CUDA major into the same prefix and records it', async () => {
    const store = newStore();
    const r = await runCli(['install', '12.4.1', '--profile', 'minimal', '--cudnn', '9', '--json'], {env: env(store)});
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).cudnn).toBe('9.1.0.70');
    const dir = join(store, 'versions', '12.4.1');
    expect(readlinkSync(join(dir, 'lib64', 'libcudnn.so.9'))).toBe('libcudnn.so.9.1.0.70');
    expect(readFileSync(join(dir, 'include', 'cudnn.h'), 'utf8')).toContain('9.1.0.70');
    const receipt = JSON.parse(readFileSync(join(dir, '.cudaenv-receipt.json'), 'utf8'));
    expect(receipt.cudnn).toMatchObject({release: '9.1.0', version: '9.1.0.70', variant: 'cuda12'});
    const none = await runCli(['install', '12.6.3', '--profile', 'minimal', '--cudnn', '8'], {env: env(newStore())});
    expect(none.status).toBe(1);
    expect(none.stderr).toMatch(/no cuDNN 8 built for CUDA 12/);
  });

  test('--cudnn on a version installed without it fails (exit 1: nothing asked was done) with the command that adds it; with cuDNN it reports it', async () => {
    const store = newStore();
    expect((await runCli(['install', '12.4.1', '--profile', 'minimal'], {env: env(store)})).status).toBe(0);
    const r = await runCli(['install', '12.4', '--profile', 'minimal', '--cudnn', '9'], {env: env(store)});
    // Issue 44 item 11: this was exit 0 with a warning, cuDNN not added.
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    // Nothing of "Installing CUDA ..." before it: nothing is installed.
    expect(r.stderr).toBe(`cudaenv: cuDNN 9.1.0.70 was not added: CUDA 12.4.1 is already installed in ${join(store, 'versions', '12.4.1')} without cuDNN, and an install does not change an installed toolkit\n` +
      'Reinstall it with cuDNN 9.1.0.70: cudaenv install 12.4.1 --cudnn 9 --profile minimal --force (the CUDA archives come from the cache; the installed copy stays usable until the new one is in place).\n');
    const json = await runCli(['install', '12.4', '--profile', 'minimal', '--cudnn', '9', '--json'], {env: env(store)});
    expect(json.status).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ok: false, error: {code: 'cudnn-not-added'}});
    const forced = await runCli(['install', '12.4', '--profile', 'minimal', '--cudnn', '9', '--force', '--json'], {env: env(store)});
    // this generated mirror has no cuda_nvrtc: cuDNN's need of it is said (libcublas is added)
    expect(JSON.parse(forced.stdout)).toMatchObject({status: 'reinstalled', cudnn: '9.1.0.70', notes: ['added libcublas: cuDNN 9.1.0.70 loads libcublasLt'],
      warnings: ['cuDNN 9.1.0.70 loads libnvrtc, which CUDA 12.4.1 has no archive of for linux-x86_64: cuDNN will not work until it is found elsewhere (LD_LIBRARY_PATH)']});
    const again = await runCli(['install', '12.4', '--cudnn', '9', '--json'], {env: env(store)});
    expect(JSON.parse(again.stdout)).toMatchObject({status: 'already-installed', cudnn: '9.1.0.70', warnings: []});
  });

  test('the mirror setting is used when neither --mirror nor CUDAENV_MIRROR is given', async () => {
    const store = newStore();
    const plain = cliEnv(store, {CUDAENV_RETRY_DELAY_MS: '20'});
    expect((await runCli(['config', 'mirror', server.url], {env: plain})).status).toBe(0);
    const ls = await runCli(['ls-remote', '--profile', 'minimal', '--json'], {env: plain});
    expect(JSON.parse(ls.stdout)).toEqual({mirror: server.url, releases: [{version: '12.4.1', installed: false, installable: true, platform: 'linux-x86_64'}, {version: '12.6.3', installed: false, installable: true, platform: 'linux-x86_64'}],
      // How old the tables cudaenv carries are (issue 36): nothing listed is newer than either.
      tables: {driver_table: {newer: [], newest: expect.any(String)}, release_table: {newer: [], newest: expect.any(String), oldest: '11.4.2'}}});
    const r = await runCli(['install', '12.6', '--profile', 'minimal', '--json'], {env: plain});
    expect(JSON.parse(r.stdout)).toMatchObject({version: '12.6.3', status: 'installed', mirror: server.url});
    // a directory is kept absolute (a relative one would follow every later cwd); a bad value is refused when set
    const here = join(tmp.dir, `cwd${n++}`);
    mkdirSync(join(here, 'redist'), {recursive: true});
    expect((await runCli(['config', 'mirror', 'redist'], {env: plain, cwd: here})).status).toBe(0);
    expect((await runCli(['config', 'mirror'], {env: plain})).stdout).toBe(`${join(here, 'redist')}\n`);
    const bad = await runCli(['config', 'mirror', 'ftp://example.com/redist/'], {env: plain});
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('cudaenv: the mirror setting "ftp://example.com/redist/" uses ftp, which cudaenv does not download from');
    expect((await runCli(['config', 'mirror'], {env: plain})).stdout).toBe(`${join(here, 'redist')}\n`);
    // a URL without its scheme is refused with the URL it likely meant; a directory not there yet is set, with a warning
    const noScheme = await runCli(['config', 'mirror', 'mirror.example.com/cuda/redist'], {env: plain, cwd: here});
    expect(noScheme.status).toBe(2);
    expect(noScheme.stderr).toContain('Did you mean https://mirror.example.com/cuda/redist?');
    const later = await runCli(['config', 'cudnnMirror', 'not-mounted-yet'], {env: plain, cwd: here});
    expect(later.status).toBe(0);
    expect(later.stderr).toBe(`cudaenv: warning: the directory ${join(here, 'not-mounted-yet')} does not exist (yet): installs from this mirror fail until it does\n`);
    expect((await runCli(['config', 'mirror'], {env: plain})).stdout).toBe(`${join(here, 'redist')}\n`);
    // the variable beats the setting
    const env2 = await runCli(['ls-remote'], {env: {...plain, CUDAENV_MIRROR: 'http://127.0.0.1:1/'}});
    expect(env2.status).toBe(1);
    expect(env2.stderr).toContain('http://127.0.0.1:1/');
  });

  test('usage errors exit 2 and name the value', async () => {
    const store = newStore();
    const arch = await runCli(['install', '12.4', '--arch', 'mips'], {env: env(store)});
    expect(arch.status).toBe(2);
    expect(arch.stderr).toMatch(/--arch "mips"/);
    const spec = await runCli(['install', 'stable'], {env: env(store)});
    expect(spec.status).toBe(2);
    const mirror = await runCli(['install', '12.4', '--mirror', 'ftp://x/'], {env: env(store)});
    expect(mirror.status).toBe(2);
    expect(checkStore(store)).toEqual([]);
  });

  test('uninstall warns about the global default and a .cuda-version; a registered toolkit keeps its files', async () => {
    const store = newStore();
    expect((await runCli(['install', '12.4.1', '--profile', 'minimal'], {env: env(store)})).status).toBe(0);
    expect((await runCli(['global', '12.4'], {env: env(store)})).status).toBe(0);
    // Aliases: one selecting it (and another version once it is gone), one of another version.
    const tk122 = makeFakeToolkit(join(tmp.dir, `tk122-${n}`), {version: '12.2.0'});
    expect((await runCli(['add', tk122], {env: env(store)})).status).toBe(0);
    for (const [name, spec] of [['stable', '12'], ['exact', '12.4.1'], ['old', '12.2']]) expect((await runCli(['alias', name, spec], {env: env(store)})).status).toBe(0);
    const project = join(tmp.dir, `proj${n}`);
    mkdirSync(project);
    writeFileSync(join(project, '.cuda-version'), '12.4.1\n');
    const r = await runCli(['uninstall', '12.4.1'], {env: env(store), cwd: project});
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/was the global default/);
    expect(r.stderr).toMatch(/\.cuda-version selects CUDA 12\.4\.1/);
    expect(r.stderr).toContain('the alias stable (12) selected CUDA 12.4.1; it now selects CUDA 12.2.0 (change it with `cudaenv alias stable VERSION`)');
    expect(r.stderr).toContain('the alias exact (12.4.1) selected CUDA 12.4.1; it now selects nothing installed');
    expect(r.stderr).not.toContain('alias old');
    expect((await runCli(['uninstall', '12.2.0'], {env: env(store)})).status).toBe(0);
    expect(existsSync(join(store, 'versions', '12.4.1'))).toBe(false);
    expect(existsSync(join(store, 'resolve', '12.4'))).toBe(false);
    const tk = makeFakeToolkit(join(tmp.dir, `tk${n}`), {version: '12.2.0'});
    expect((await runCli(['add', tk], {env: env(store)})).status).toBe(0);
    const u = await runCli(['uninstall', '12.2.0', '--json'], {env: env(store)});
    expect(JSON.parse(u.stdout)).toMatchObject({version: '12.2.0', kind: 'registered', target: tk});
    expect(existsSync(join(tk, 'bin', 'nvcc'))).toBe(true);
    const missing = await runCli(['uninstall', '12.2.0'], {env: env(store)});
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/CUDA 12\.2\.0 is not installed/);
  });

  test('uninstall warns when a link made by cudaenv link points at the version', async () => {
    const store = newStore();
    expect((await runCli(['install', '12.4.1', '--profile', 'minimal'], {env: env(store)})).status).toBe(0);
    const target = join(tmp.dir, `linked${n++}`, 'cuda');
    mkdirSync(join(target, '..'));
    const link = await runCli(['link', '12.4.1', '--target', target], {env: env(store)});
    expect(link.status).toBe(0);
    const r = await runCli(['uninstall', '12.4.1', '--json'], {env: env(store)});
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).warnings).toEqual([`${target} points at CUDA 12.4.1, which is now removed; point it at another version (cudaenv link VERSION --target ${target}) or restore what was there (cudaenv unlink --target ${target})`]);
    expect(r.stderr).toContain(`cudaenv: warning: ${target} points at CUDA 12.4.1`);
  });

  test('SIGKILL during download, during extraction and just before the rename leaves nothing half-done; the next install succeeds', async () => {
    for (const point of ['download', 'before-merge', 'before-rename']) {
      const store = newStore();
      const cp = checkpoints(point, [point]);
      const {child, done} = startCli(['install', '12.4.1', '--allow-missing-parts'], env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp}));
      await waitFor(join(cp, point));
      if (point === 'before-rename') {
        // complete and written, but not yet in versions/
        expect(readdirSync(join(store, 'tmp')).some((d) => d.startsWith('stage-12.4.1-'))).toBe(true);
      }
      child.kill('SIGKILL');
      await done;
      expect(checkStore(store)).toEqual([]);
      expect((await runCli(['ls', '--json'], {env: env(store)})).stdout).toContain('"versions": []');
      const again = await runCli(['install', '12.4.1', '--allow-missing-parts', '--json'], {env: env(store)});
      expect(again.status).toBe(0);
      expect(checkStore(store)).toEqual(['12.4.1']);
      expect(readdirSync(join(store, 'tmp'))).toEqual([]); // the dead run's stage was cleaned
      expect(readdirSync(join(store, 'cache')).filter((f) => f.endsWith('.part'))).toEqual([]);
      expect(readlinkSync(join(store, 'versions', '12.4.1', 'lib64', 'libcudart.so'))).toBe('libcudart.so.12');
    }
  });

  test.each(['exception', 'rejection'])('an uncaught %s (injected mid-download) is one line, exit 1, with locks and stage cleaned at once; the next install resumes', async (kind) => {
    const store = newStore();
    const cp = checkpoints(`crash-${kind}`, []);
    writeFileSync(join(cp, 'download.crash'), kind);
    const r = await runCli(['install', '12.4.1', '--allow-missing-parts', ...(kind === 'rejection' ? ['--json'] : [])], {env: env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp})});
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^cudaenv: unexpected internal error: injected crash at download\. This is a bug in cudaenv; the locks and temporary files of this run were cleaned up\./);
    expect(r.stderr).not.toMatch(/\n\s+at |node:internal|\^$/m); // no stack trace, no Node banner
    if (kind === 'rejection') expect(JSON.parse(r.stdout)).toMatchObject({ok: false, error: {code: 'internal', message: 'unexpected internal error: injected crash at download'}});
    expect(readdirSync(join(store, 'locks'))).toEqual([]);
    expect(readdirSync(join(store, 'tmp'))).toEqual([]);
    expect(checkStore(store)).toEqual([]);
    const parts = readdirSync(join(store, 'cache')).filter((f) => f.endsWith('.part') && statSync(join(store, 'cache', f)).size > 0);
    expect(parts.length).toBeGreaterThan(0); // bytes already downloaded are kept for the next run
    const start = server.log.length;
    const again = await runCli(['install', '12.4.1', '--allow-missing-parts', '--json'], {env: env(store)});
    expect(again.status).toBe(0);
    // the kept bytes are not fetched again: a kept part is resumed (206) or, when complete, not asked for
    for (const part of parts) {
      const name = part.replace(/^[0-9a-f]{16}-/, '').replace(/\.part$/, '');
      expect(server.log.slice(start).filter((l) => l.path.endsWith(`/${name}`) && l.status !== 206)).toEqual([]);
    }
    expect(checkStore(store)).toEqual(['12.4.1']);
  });

  test('what a SIGKILLed run left (its locks, also on archives no one needs now, and its stage) is reclaimed by the next install, of any version', async () => {
    const store = newStore();
    const cp = checkpoints('kill-locks', ['download']);
    const {child, done} = startCli(['install', '12.4.1', '--allow-missing-parts'], env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp}));
    await waitFor(join(cp, 'download'));
    child.kill('SIGKILL');
    await done;
    const left = readdirSync(join(store, 'locks'));
    expect(left).toContain('version-12.4.1.lock');
    expect(left.filter((f) => f.startsWith('archive-')).length).toBeGreaterThan(0);
    expect(readdirSync(join(store, 'tmp')).some((d) => d.startsWith('stage-12.4.1-'))).toBe(true);
    const other = await runCli(['install', '12.6.3', '--profile', 'minimal', '--json'], {env: env(store)});
    expect(other.status).toBe(0);
    expect(readdirSync(join(store, 'locks'))).toEqual([]);
    expect(readdirSync(join(store, 'tmp'))).toEqual([]);
    expect(checkStore(store)).toEqual(['12.6.3']);
  });

  test('--force keeps the old copy usable until the new one is in place, also when killed between', async () => {
    const store = newStore();
    expect((await runCli(['install', '12.4.1', '--profile', 'minimal'], {env: env(store)})).status).toBe(0);
    const nvcc = join(store, 'versions', '12.4.1', 'bin', 'nvcc');
    const cp = checkpoints('force', ['before-merge', 'before-rename']);
    const {child, done} = startCli(['install', '12.4.1', '--force', '--profile', 'minimal'], env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp}));
    await waitFor(join(cp, 'before-merge'));
    expect(spawnSync(nvcc, ['--version'], {encoding: 'utf8'}).stdout).toMatch(/release 12\.4/);
    writeFileSync(join(cp, 'before-merge.go'), '');
    await waitFor(join(cp, 'before-rename'));
    expect(spawnSync(nvcc, ['--version'], {encoding: 'utf8'}).stdout).toMatch(/release 12\.4/);
    child.kill('SIGKILL');
    await done;
    expect(spawnSync(nvcc, ['--version'], {encoding: 'utf8'}).stdout).toMatch(/release 12\.4/);
    expect(checkStore(store)).toEqual(['12.4.1']);
    const r = await runCli(['install', '12.4.1', '--force', '--profile', 'minimal', '--json'], {env: env(store)});
    expect(JSON.parse(r.stdout).status).toBe('reinstalled');
    expect(checkStore(store)).toEqual(['12.4.1']);
    expect(readdirSync(join(store, 'tmp'))).toEqual([]);

    // killed between "old copy aside" and "new copy in": the next install puts the old one back
    const cp2 = checkpoints('swap', ['between-renames']);
    const second = startCli(['install', '12.4.1', '--force', '--profile', 'minimal'], env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp2}));
    await waitFor(join(cp2, 'between-renames'));
    second.child.kill('SIGKILL');
    await second.done;
    expect(existsSync(join(store, 'versions', '12.4.1'))).toBe(false);
    expect(readdirSync(join(store, 'tmp')).filter((d) => d.startsWith('old-12.4.1-')).length).toBe(1);
    const after = await runCli(['install', '12.4.1', '--profile', 'minimal', '--json'], {env: env(store)});
    expect(JSON.parse(after.stdout).status).toBe('already-installed');
    expect(spawnSync(nvcc, ['--version'], {encoding: 'utf8'}).stdout).toMatch(/release 12\.4/);
    expect(readdirSync(join(store, 'tmp'))).toEqual([]);
  });

  test('an interrupted download resumes from the .part in the next run', async () => {
    const store = newStore();
    const cp = checkpoints('resume', ['download']);
    const rel = 'cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.6.145-archive.tar.xz';
    server.faults.set(rel, [{kind: 'throttle', bytesPerSecond: 4000}]);
    const {child, done} = startCli(['install', '12.6.3', '--components', 'cuda_nvcc'], env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp}));
    await waitFor(join(cp, 'download'));
    child.kill('SIGKILL');
    await done;
    server.faults.delete(rel);
    const parts = readdirSync(join(store, 'cache')).filter((f) => f.endsWith('.part'));
    expect(parts.length).toBe(1);
    const start = server.log.length;
    expect((await runCli(['install', '12.6.3', '--components', 'cuda_nvcc'], {env: env(store)})).status).toBe(0);
    const hit = server.log.slice(start).find((l) => l.path === rel)!;
    expect(hit.status).toBe(206);
    expect(hit.range).toMatch(/^bytes=[1-9]\d*-$/);
    expect(checkStore(store)).toEqual(['12.6.3']);
  });

  test('SIGINT stops the install cleanly with exit 130', async () => {
    const store = newStore();
    const cp = checkpoints('int', ['before-merge']);
    const {child, done} = startCli(['install', '12.4.1', '--allow-missing-parts'], env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp}));
    await waitFor(join(cp, 'before-merge'));
    child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 200));
    writeFileSync(join(cp, 'before-merge.go'), '');
    const r = await done;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/interrupted by SIGINT; nothing was installed/);
    expect(checkStore(store)).toEqual([]);
    expect(readdirSync(join(store, 'tmp'))).toEqual([]);
  });

  test('SIGINT while waiting for another install\'s lock stops at once (exit 130), leaving that lock alone', async () => {
    const store = newStore();
    mkdirSync(join(store, 'locks'), {recursive: true});
    // A live holder: this test process itself.
    const stat = readFileSync(`/proc/${process.pid}/stat`, 'utf8');
    const startTime = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    const lock = join(store, 'locks', 'version-12.4.1.lock');
    const holder = JSON.stringify({pid: process.pid, hostname: hostname(), startTime, acquiredAt: 'x', purpose: 'install of CUDA 12.4.1'});
    writeFileSync(lock, holder);
    const {child, done} = startCli(['install', '12.4.1', '--profile', 'minimal'], env(store));
    const end = Date.now() + 30000;
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    while (!/Waiting for process/.test(stderr) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(stderr).toMatch(new RegExp(`Waiting for process ${process.pid}`));
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    const r = await done;
    clearTimeout(timer);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/interrupted by SIGINT; nothing was installed/);
    expect(readFileSync(lock, 'utf8')).toBe(holder);
    expect(checkStore(store)).toEqual([]);
  });

  test('SIGINT while the mirror does not answer (fetching the manifest) stops at once with 130', async () => {
    const {createServer} = await import('node:net');
    const sockets: import('node:net').Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket)); // accepts, never answers
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(silent.address() as import('node:net').AddressInfo).port}/`;
      const store = newStore();
      const {child, done} = startCli(['install', '12.4.1', '--mirror', url], env(store));
      const end = Date.now() + 30000;
      while (sockets.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(sockets.length).toBeGreaterThan(0);
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      const r = await done;
      clearTimeout(timer);
      expect(r.signal).toBeNull();
      expect(r.code).toBe(130);
      expect(r.stderr).toMatch(/interrupted by SIGINT; nothing was installed/);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  test('a corrupted cache file is detected and fetched again; a dead process\'s lock is taken over', async () => {
    const store = newStore();
    expect((await runCli(['install', '12.4.1', '--profile', 'minimal'], {env: env(store)})).status).toBe(0);
    const cached = readdirSync(join(store, 'cache')).find((f) => f.includes('cuda_cudart'))!;
    writeFileSync(join(store, 'cache', cached), 'garbage');
    const dead = Number(spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim());
    writeFileSync(join(store, 'locks', 'version-12.4.1.lock'), JSON.stringify({pid: dead, hostname: hostname(), startTime: '1', acquiredAt: 'x', purpose: 'install of CUDA 12.4.1'}));
    const r = await runCli(['install', '12.4.1', '--profile', 'minimal', '--force', '--json'], {env: env(store)});
    expect(r.status).toBe(0);
    const cudart = JSON.parse(r.stdout).components.find((c: {name: string}) => c.name === 'cuda_cudart');
    expect(cudart.from_cache).toBe(false);
    expect(checkStore(store)).toEqual(['12.4.1']);
  });

  test('two CLI installs of one version at once', async () => {
    const store = newStore();
    const a = startCli(['install', '12.6.3', '--profile', 'minimal', '--json'], env(store));
    const b = startCli(['install', '12.6.3', '--profile', 'minimal', '--json'], env(store));
    const [ra, rb] = await Promise.all([a.done, b.done]);
    expect([ra.code, rb.code]).toEqual([0, 0]);
    expect([JSON.parse(ra.stdout).status, JSON.parse(rb.stdout).status].sort()).toEqual(['already-installed', 'installed']);
    expect(checkStore(store)).toEqual(['12.6.3']);
  });
});

describe('cudaenv cache: what downloads leave, and freeing it', () => {
  // (cache/ also holds remote-versions, the completion list, which clean leaves alone)
  const cacheFiles = (store: string): string[] => readdirSync(join(store, 'cache')).filter((f) => /^[0-9a-f]{16}-/.test(f)).sort();

  test('lists verified archives, interrupted downloads and manifest copies; clean --partial removes only .part files, clean the rest; installed versions stay, a reinstall fetches again', async () => {
    const store = newStore();
    expect((await runCli(['install', '12.4.1', '--profile', 'minimal'], {env: env(store)})).status).toBe(0);
    expect((await runCli(['ls-remote'], {env: env(store)})).status).toBe(0); // keeps manifest copies
    const archives = cacheFiles(store);
    expect(archives.length).toBeGreaterThan(0);
    const part = `${'f'.repeat(16)}-libcufft-linux-x86_64-12.4.127-archive.tar.xz.part`;
    writeFileSync(join(store, 'cache', part), Buffer.alloc(1000));
    const shown = JSON.parse((await runCli(['cache', '--json'], {env: env(store)})).stdout) as {dir: string; files: Array<{file: string; kind: string; bytes: number}>; manifests: {files: number; bytes: number}; bytes: number};
    expect(shown.dir).toBe(join(store, 'cache'));
    expect(shown.files.filter((f) => f.kind === 'archive').map((f) => f.file)).toEqual(archives);
    expect(shown.files.filter((f) => f.kind === 'partial')).toEqual([{file: part, kind: 'partial', bytes: 1000}]);
    expect(shown.manifests.files).toBeGreaterThan(0);
    const sizes = archives.reduce((s, f) => s + statSync(join(store, 'cache', f)).size, 0);
    expect(shown.bytes).toBe(sizes + 1000 + shown.manifests.bytes);
    const human = await runCli(['cache'], {env: env(store)});
    expect(human.stdout).toContain(`${join(store, 'cache')}: `);
    expect(human.stdout).toMatch(new RegExp(`${archives.length} verified archives? \\(`));
    expect(human.stdout).toMatch(/1 interrupted download \(1000 B\)/);

    const partial = JSON.parse((await runCli(['cache', 'clean', '--partial', '--json'], {env: env(store)})).stdout) as {removed: Array<{file: string}>; freedBytes: number};
    expect(partial.removed.map((f) => f.file)).toEqual([part]);
    expect(partial.freedBytes).toBe(1000);
    expect(cacheFiles(store)).toEqual(archives);

    const all = await runCli(['cache', 'clean'], {env: env(store)});
    expect(all.status).toBe(0);
    expect(all.stdout).toMatch(new RegExp(`^Removed ${archives.length} files and \\d+ manifest cop(y|ies) from the cache, .* freed\\.$`, 'm'));
    expect(cacheFiles(store)).toEqual([]);
    expect(existsSync(join(store, 'cache', 'manifests'))).toBe(false);
    expect(checkStore(store)).toEqual(['12.4.1']);
    expect(spawnSync(join(store, 'versions', '12.4.1', 'bin', 'nvcc'), ['--version'], {encoding: 'utf8'}).stdout).toMatch(/release 12\.4/);

    const before = server.log.length;
    const again = JSON.parse((await runCli(['install', '12.4.1', '--force', '--profile', 'minimal', '--json'], {env: env(store)})).stdout) as {components: Array<{from_cache: boolean}>};
    expect(again.components.every((c) => !c.from_cache)).toBe(true);
    expect(server.log.slice(before).filter((l) => l.path.endsWith('.tar.xz')).length).toBe(archives.length);
  });

  test('an archive a running install is using is kept and named, and that install finishes', async () => {
    const store = newStore();
    const cp = checkpoints('cache-busy', ['download']);
    const {child, done} = startCli(['install', '12.4.1', '--profile', 'minimal'], env(store, {CUDAENV_TEST_CHECKPOINT_DIR: cp}));
    await waitFor(join(cp, 'download'));
    const parts = cacheFiles(store).filter((f) => f.endsWith('.part'));
    expect(parts.length).toBeGreaterThan(0);
    const r = await runCli(['cache', 'clean'], {env: env(store)});
    expect(r.status).toBe(0);
    for (const p of parts) {
      expect(existsSync(join(store, 'cache', p))).toBe(true);
      expect(r.stderr).toContain(`kept ${p}: in use by download of `);
    }
    expect(r.stderr).toMatch(new RegExp(`\\(process ${child.pid} on `));
    writeFileSync(join(cp, 'download.go'), '');
    expect((await done).code).toBe(0);
    expect(checkStore(store)).toEqual(['12.4.1']);
  });

  test('uninstall, like install, reclaims the locks of processes that are gone', async () => {
    const store = newStore();
    expect((await runCli(['install', '12.4.1', '--profile', 'minimal'], {env: env(store)})).status).toBe(0);
    const gone = spawnSync('true').pid;
    const owner = {pid: gone, hostname: hostname(), startTime: null, acquiredAt: new Date().toISOString(), purpose: 'download of x'};
    writeFileSync(join(store, 'locks', 'archive-0123456789abcdef.lock'), JSON.stringify(owner));
    expect((await runCli(['uninstall', '12.4.1'], {env: env(store)})).status).toBe(0);
    expect(readdirSync(join(store, 'locks'))).toEqual([]);
  });
});
