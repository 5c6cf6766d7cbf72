import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync} from 'node:fs';
import {hostname} from 'node:os';
import {join} from 'node:path';
import {acquireLock, lockPath, processStartTime, readLockOwner, reclaimStaleLocks} from '../../../src/core/store/lock.js';
import {makeTempDir} from '../../helpers/tmp.js';

let tmp: {dir: string; cleanup: () => void};
beforeAll(() => {
  tmp = makeTempDir('cudaenv-lock-');
});
afterAll(() => tmp.cleanup());

function deadPid(): number {
  const r = spawnSync('sh', ['-c', 'echo $$']);
  return Number(r.stdout.toString().trim());
}

describe('lock', () => {
  test('one holder at a time; the second waits until release', async () => {
    const dir = join(tmp.dir, 'a');
    const first = await acquireLock(dir, 'version-12.4.1', {purpose: 'install of CUDA 12.4.1'});
    expect(readLockOwner(first.path)).toMatchObject({pid: process.pid, hostname: hostname(), purpose: 'install of CUDA 12.4.1'});
    await expect(acquireLock(dir, 'version-12.4.1', {wait: false, purpose: 'install of CUDA 12.4.1'})).rejects.toThrow(new RegExp(`locked by process ${process.pid} on `));
    let waited = false;
    const second = acquireLock(dir, 'version-12.4.1', {pollMs: 20, onWait: () => {
      waited = true;
    }});
    await new Promise((r) => setTimeout(r, 100));
    expect(waited).toBe(true);
    first.release();
    const lock2 = await second;
    expect(existsSync(lock2.path)).toBe(true);
    lock2.release();
    expect(existsSync(lock2.path)).toBe(false);
  });

  test('a lock of a dead process is taken over at once', async () => {
    const dir = join(tmp.dir, 'b');
    const path = lockPath(dir, 'x');
    (await acquireLock(dir, 'x')).release();
    writeFileSync(path, JSON.stringify({pid: deadPid(), hostname: hostname(), startTime: '1', acquiredAt: 'then', purpose: 'old'}));
    const started = Date.now();
    const lock = await acquireLock(dir, 'x', {timeoutMs: 5000});
    expect(Date.now() - started).toBeLessThan(2000);
    expect(readLockOwner(path)?.pid).toBe(process.pid);
    lock.release();
  });

  test('a reused pid (another start time) counts as dead', async () => {
    const dir = join(tmp.dir, 'c');
    const path = lockPath(dir, 'x');
    (await acquireLock(dir, 'x')).release();
    const myStart = processStartTime(process.pid);
    expect(myStart).not.toBeNull();
    // Control: the same pid with its real start time is alive, so the lock is honoured.
    writeFileSync(path, JSON.stringify({pid: process.pid, hostname: hostname(), startTime: myStart, acquiredAt: 'then', purpose: 'old'}));
    await expect(acquireLock(dir, 'x', {wait: false})).rejects.toThrow(new RegExp(`is locked by process ${process.pid} `));
    expect(readLockOwner(path)).toMatchObject({acquiredAt: 'then', purpose: 'old'});
    // The same pid started at another time is another process: its lock is taken over at once.
    writeFileSync(path, JSON.stringify({pid: process.pid, hostname: hostname(), startTime: `${myStart}9`, acquiredAt: 'then', purpose: 'old'}));
    const started = Date.now();
    const lock = await acquireLock(dir, 'x', {timeoutMs: 2000, purpose: 'new'});
    expect(Date.now() - started).toBeLessThan(1500);
    const owner = readLockOwner(path);
    expect(owner).toMatchObject({pid: process.pid, hostname: hostname(), startTime: myStart, purpose: 'new'});
    expect(owner?.acquiredAt).not.toBe('then');
    lock.release();
    expect(existsSync(path)).toBe(false);
  });

  test('another host\'s lock is honoured until stale, then taken over', async () => {
    const dir = join(tmp.dir, 'd');
    const path = lockPath(dir, 'x');
    (await acquireLock(dir, 'x')).release();
    writeFileSync(path, JSON.stringify({pid: 1, hostname: 'other-node-17', startTime: '5', acquiredAt: 'then', purpose: 'install of CUDA 12.4.1'}));
    await expect(acquireLock(dir, 'x', {staleMs: 60_000, timeoutMs: 300, pollMs: 50})).rejects.toThrow(/process 1 on other-node-17/);
    const old = new Date(Date.now() - 120_000);
    utimesSync(path, old, old);
    const lock = await acquireLock(dir, 'x', {staleMs: 60_000, timeoutMs: 2000});
    expect(readLockOwner(path)?.hostname).toBe(hostname());
    lock.release();
  });

  test('reclaimStaleLocks removes the locks of dead owners and old takeover guards, nothing live', async () => {
    const dir = join(tmp.dir, 'reclaim');
    mkdirSync(dir);
    const live = await acquireLock(dir, 'archive-live');
    const dead = JSON.stringify({pid: deadPid(), hostname: hostname(), startTime: '1', acquiredAt: 'x', purpose: 'download'});
    writeFileSync(join(dir, 'archive-dead.lock'), dead);
    writeFileSync(join(dir, 'version-12.4.1.lock'), dead);
    writeFileSync(join(dir, 'remote.lock'), JSON.stringify({pid: 1, hostname: 'elsewhere', startTime: null, acquiredAt: 'x', purpose: 'install'}));
    writeFileSync(join(dir, 'old.lock.takeover'), '');
    utimesSync(join(dir, 'old.lock.takeover'), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    writeFileSync(join(dir, 'fresh.lock.takeover'), '');
    writeFileSync(join(dir, 'notes.txt'), 'not a lock');
    expect(reclaimStaleLocks(dir).sort()).toEqual(['archive-dead.lock', 'old.lock.takeover', 'version-12.4.1.lock']);
    expect(readdirSync(dir).sort()).toEqual(['archive-live.lock', 'fresh.lock.takeover', 'notes.txt', 'remote.lock']);
    live.release();
    expect(reclaimStaleLocks(join(tmp.dir, 'missing'))).toEqual([]);
  });

  test('lock names cannot escape the locks directory', () => {
    expect(() => lockPath('/x', '../etc')).toThrow();
    expect(() => lockPath('/x', 'a/b')).toThrow();
  });
});
