import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {createHash} from 'node:crypto';
import {appendFileSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {have} from '../helpers/capabilities.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {CAN_HIDE_NODE, DIST_EXE, EXE, HAVE_EXE, HOST_ARCH, NEEDS_EXE, NEEDS_HIDE_NODE, WITHOUT_NODE} from './exe.js';
import {serveDir} from './serve.js';

/** `cudaenv self-update` (issue 34): from the base install.sh remembered, checked, atomic; refused where npm or pip manage cudaenv. */

const ARCHIVE = `cudaenv-linux-${HOST_ARCH}.tar.xz`;
const READY = HAVE_EXE && existsSync(join(DIST_EXE, ARCHIVE)) && have('python3') && CAN_HIDE_NODE;
const WHY = !HAVE_EXE ? NEEDS_EXE : CAN_HIDE_NODE ? `needs ${ARCHIVE} in dist-exe (npm run build:exe) and python3` : NEEDS_HIDE_NODE;

let tmp: {dir: string; cleanup: () => void};
let good: {url: string; close: () => void};
let bad: {url: string; close: () => void};

beforeAll(async () => {
  if (!READY) return;
  tmp = makeTempDir('cudaenv-self-update-');
  for (const name of ['good', 'bad']) {
    mkdirSync(join(tmp.dir, name));
    symlinkSync(join(DIST_EXE, ARCHIVE), join(tmp.dir, name, ARCHIVE));
  }
  copyFileSync(join(DIST_EXE, 'SHA256SUMS'), join(tmp.dir, 'good', 'SHA256SUMS'));
  writeFileSync(join(tmp.dir, 'bad', 'SHA256SUMS'), `${'f'.repeat(64)}  ${ARCHIVE}\n`);
  good = await serveDir(join(tmp.dir, 'good'));
  bad = await serveDir(join(tmp.dir, 'bad'));
});
afterAll(() => {
  good?.close();
  bad?.close();
  tmp?.cleanup();
});

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** An install as install.sh leaves it, of an executable that differs from the release's (one byte appended: ELF ignores it). */
function installed(name: string, base: string | undefined): {dir: string; exe: string} {
  const dir = join(tmp.dir, name, '.cudaenv', 'bin');
  mkdirSync(dir, {recursive: true});
  const exe = join(dir, 'cudaenv');
  copyFileSync(EXE, exe);
  appendFileSync(exe, '\n');
  if (base) writeFileSync(join(dir, '.cudaenv-receipt.json'), JSON.stringify({installer: 'install.sh', base, arch: HOST_ARCH}));
  return {dir, exe};
}

function run(exe: string, env: NodeJS.ProcessEnv = {}) {
  return spawnSync(WITHOUT_NODE, [exe, 'self-update'], {env: {PATH: '/usr/bin:/bin', HOME: tmp.dir, CUDAENV_DIR: join(tmp.dir, 'store'), ...env}, encoding: 'utf8', timeout: 120_000});
}

describeIf(READY, WHY)('cudaenv self-update', () => {
  test('replaces the executable with the release\'s, by a rename (a new inode), with node hidden; a second run has nothing to do', () => {
    const {dir, exe} = installed('update', good.url);
    const inode = statSync(exe).ino;
    const r = run(exe);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^${exe}: cudaenv/\\S+ -> cudaenv/\\S+\\n$`));
    expect(statSync(exe).ino).not.toBe(inode);
    expect(sha(exe)).toBe(sha(EXE));
    expect(statSync(exe).mode & 0o777).toBe(0o755);
    expect(readdirSync(dir).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
    const again = run(exe);
    expect(again.status).toBe(0);
    expect(again.stdout).toContain(`${exe} is already cudaenv/`);
  });

  test('the shell start files an older build wrote are written again by the new executable, so the next shell sources its code (node hidden)', () => {
    const {exe} = installed('shells', good.url);
    const store = join(tmp.dir, 'shells', 'store');
    const old = join(store, 'exe', '0.0.9-000000000000', 'shims', 'shell');
    mkdirSync(join(store, 'shell'), {recursive: true});
    // As the older build left them: naming its own copy of the shell code, which an update leaves behind.
    for (const shell of ['bash', 'fish']) writeFileSync(join(store, 'shell', `init.${shell}`), `# cudaenv ${shell} integration (an older build)\n. ${old}/posix.sh\n`);
    const r = run(exe, {CUDAENV_DIR: store});
    expect([r.status, r.stderr]).toEqual([0, '']);
    const builds = readdirSync(join(store, 'exe')).filter((b) => b !== '0.0.9-000000000000');
    expect(builds).toHaveLength(1);
    const code = join(store, 'exe', builds[0]!, 'shims', 'shell');
    const bash = readFileSync(join(store, 'shell', 'init.bash'), 'utf8');
    expect(bash).toContain(`. ${code}/posix.sh && . ${code}/bash.sh`);
    expect(bash).toContain(`_CUDAENV_BIN=${exe}`);
    expect(readFileSync(join(store, 'shell', 'init.fish'), 'utf8')).toContain(`${code}/cudaenv.fish`);
    for (const file of ['posix.sh', 'bash.sh', 'cudaenv.fish']) expect(existsSync(join(code, file))).toBe(true);
    // Only the start files that were there: an update does not set up shells the user never set up.
    expect(existsSync(join(store, 'shell', 'init.zsh'))).toBe(false);
    const shell = spawnSync(WITHOUT_NODE, ['bash', '--norc', '--noprofile', '-c', `. ${join(store, 'shell', 'init.bash')} && type -t cudaenv && cudaenv --version`], {env: {PATH: '/usr/bin:/bin', HOME: tmp.dir, CUDAENV_DIR: store}, encoding: 'utf8'});
    expect(shell.stderr).toBe('');
    expect(shell.stdout).toMatch(/^function\ncudaenv\/\S+ linux-/);
  });

  test('an archive that does not match SHA256SUMS (CUDAENV_INSTALL_BASE overriding the receipt): nothing replaced, both sums named', () => {
    const {dir, exe} = installed('bad', good.url);
    const before = sha(exe);
    const r = run(exe, {CUDAENV_INSTALL_BASE: bad.url});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${bad.url}/${ARCHIVE} has SHA-256 ${sha(join(DIST_EXE, ARCHIVE))}, but SHA256SUMS says ${'f'.repeat(64)}: nothing was replaced`);
    expect(sha(exe)).toBe(before);
    expect(readdirSync(dir).sort()).toEqual(['.cudaenv-receipt.json', 'cudaenv']);
  });

  test('without a receipt or CUDAENV_INSTALL_BASE: refused, saying where it looked and what to do', () => {
    const {dir, exe} = installed('noreceipt', undefined);
    const r = run(exe);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`it left no ${join(dir, '.cudaenv-receipt.json')}`);
    expect(r.stderr).toContain('Set CUDAENV_INSTALL_BASE');
  });
});

test('the npm package refuses, naming the clone\'s update', () => {
  const r = spawnSync(join(REPO_ROOT, 'bin', 'cudaenv'), ['self-update'], {env: {PATH: process.env.PATH, HOME: REPO_ROOT, CUDAENV_DIR: '/nonexistent-cudaenv-store'}, encoding: 'utf8'});
  expect(r.status).toBe(2);
  expect(r.stderr).toContain(`this cudaenv runs from the npm package at ${REPO_ROOT}: self-update replaces only the single executable`);
  expect(r.stderr).toMatch(existsSync(join(REPO_ROOT, '.git')) ? /git -C \S+ pull && npm --prefix \S+ ci/ : /npm install -g/);
});
