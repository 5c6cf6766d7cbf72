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
