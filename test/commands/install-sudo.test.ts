import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, mkdirSync, readdirSync, statSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCli} from '../helpers/cli.js';
import {cliForNobody} from '../helpers/nobody.js';
import {realisticRelease, writeIndex, writeRelease} from '../helpers/mirror.js';
import {makeTempDir} from '../helpers/tmp.js';
import {describeIf} from '../helpers/skip.js';

/**
 * `sudo cudaenv install` works in SUDO_USER's store; as root it would leave root-owned
 * versions/, cache/ and locks/ there that the user can no longer change. It is refused
 * before anything is written, with the command to run instead.
 */
const isRoot = process.getuid?.() === 0;
const canRunAsNobody = isRoot && spawnSync('runuser', ['-u', 'nobody', '--', 'true']).status === 0;
const maybe = describeIf(canRunAsNobody, 'needs root and runuser (util-linux) for a store owned by another user');

function chownR(path: string): void {
  expect(spawnSync('chown', ['-R', 'nobody:nogroup', path]).status).toBe(0);
}

function listAll(dir: string): string[] {
  return readdirSync(dir, {recursive: true}).map(String).sort();
}

maybe('install/uninstall as root in a store owned by another user', () => {
  let tmp: {dir: string; cleanup: () => void};
  let mirror: string;
  let store: string;
  beforeAll(() => {
    tmp = makeTempDir();
    chmodSync(tmp.dir, 0o755);
    mirror = join(tmp.dir, 'mirror');
    mkdirSync(mirror);
    writeRelease(mirror, realisticRelease(join(tmp.dir, 'work'), '12.4.1'));
    writeIndex(mirror, ['12.4.1']);
    chmodSync(join(tmp.dir, 'work'), 0o755);
    store = join(tmp.dir, 'store');
    // Installed by root in a store of its own, then handed to the user, as if the user had installed it.
    const r = runCli(['install', '12.4.1', '--profile', 'minimal', '--mirror', mirror], {env: cliEnv(store)});
    expect(r.status).toBe(0);
    chownR(store);
  });
  afterAll(() => tmp.cleanup());

  test('sudo cudaenv install is refused before it writes anything, naming the command without sudo', () => {
    const before = listAll(store);
    const r = runCli(['install', '12.4', '--force', '--mirror', mirror], {env: cliEnv(store, {SUDO_USER: 'nobody'})});
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`cudaenv: refusing to run \`cudaenv install\` as root in the store ${store}, which belongs to nobody: the files root creates there could no longer be changed by nobody\n`
      + `Run it without sudo (it needs no root): CUDAENV_DIR=${store} cudaenv install 12.4 --force --mirror ${mirror}\n`);
    expect(listAll(store)).toEqual(before);
    expect(statSync(join(store, 'versions', '12.4.1')).uid).not.toBe(0);
  });

  test('root without sudo is told to run it as the store\'s owner; uninstall too; --json keeps the code', () => {
    const r = runCli(['uninstall', '12.4.1', '--json'], {env: cliEnv(store)});
    expect(r.status).toBe(1);
    const out = JSON.parse(r.stdout) as {error: {code: string; hint: string}};
    expect(out.error.code).toBe('foreign-store');
    expect(out.error.hint).toBe(`Run it as the store's owner: sudo -u nobody CUDAENV_DIR=${store} cudaenv uninstall 12.4.1 --json`);
    expect(existsSync(join(store, 'versions', '12.4.1', 'bin', 'nvcc'))).toBe(true);
  });

  test('the owner can still uninstall and install in the store', () => {
    const asNobody = (args: string[]) => spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, cliForNobody(), ...args], {env: cliEnv(store), encoding: 'utf8', cwd: tmp.dir});
    const rm = asNobody(['uninstall', '12.4.1']);
    expect(rm.stderr).toBe('');
    expect(rm.status).toBe(0);
    expect(existsSync(join(store, 'versions', '12.4.1'))).toBe(false);
    const add = asNobody(['install', '12.4.1', '--profile', 'minimal', '--mirror', mirror]);
    expect(add.status).toBe(0);
    expect(statSync(join(store, 'versions', '12.4.1')).uid).toBe(statSync(store).uid);
  });

  test('a store root owns (a shared one set up by an administrator) is not refused', () => {
    const own = join(tmp.dir, 'shared-store');
    const r = runCli(['install', '12.4.1', '--profile', 'minimal', '--mirror', mirror, '--json'], {env: cliEnv(own, {SUDO_USER: 'nobody'})});
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).status).toBe('installed');
  });
});
