import {closeSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeSync} from 'node:fs';
import {hostname} from 'node:os';
import {join} from 'node:path';
import {CudaenvError, isErrno} from '../errors.js';
import {onFatalExit} from '../fatal-cleanup.js';

/**
 * One lock file per resource under `locks/`, created with O_EXCL. The file names its owner
 * (pid, hostname, process start time), so a lock left by a dead process is recognised and
 * taken over instead of being waited on forever. On another host (a store on a shared file
 * system) the pid cannot be checked: there the owner refreshes the file's mtime while it
 * holds the lock, and a lock not refreshed for `staleMs` is taken over.
 */
export interface LockOwner {
  pid: number;
  hostname: string;
  /** Start time of the owning process (clock ticks since boot, /proc/<pid>/stat field 22); tells a reused pid apart. */
  startTime: string | null;
  acquiredAt: string;
  purpose: string;
}

export interface LockOptions {
  /** What holds the lock, for the message another process shows ("install of 12.4.1"). */
  purpose?: string;
  /** Wait for a live owner (default) or fail at once. */
  wait?: boolean;
  /** Give up waiting after this long (default: wait as long as the owner lives). */
  timeoutMs?: number;
  /** A lock from another host not refreshed for this long is stale (default 10 minutes). */
  staleMs?: number;
  pollMs?: number;
  /** Called once when the lock is busy and we start waiting. */
  onWait?: (owner: LockOwner | undefined) => void;
  /** Stops the wait (Ctrl-C): rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface Lock {
  readonly path: string;
  release(): void;
}

const DEFAULT_STALE_MS = 10 * 60 * 1000;
const TAKEOVER_STALE_MS = 10 * 1000;
const NAME_RE = /^[A-Za-z0-9._-]{1,120}$/;

export function lockPath(locksDir: string, name: string): string {
  if (!NAME_RE.test(name) || name.startsWith('.')) throw new Error(`bad lock name ${JSON.stringify(name)}`);
  return join(locksDir, `${name}.lock`);
}

/** Start time of a process from /proc (null where /proc is missing). */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null; // field 22 overall
  } catch {
    return null;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isErrno(error, 'EPERM');
  }
}

export function readLockOwner(path: string): LockOwner | undefined {
  try {
    const data = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockOwner>;
    if (typeof data.pid !== 'number' || typeof data.hostname !== 'string') return undefined;
    return {
      pid: data.pid, hostname: data.hostname, startTime: typeof data.startTime === 'string' ? data.startTime : null,
      acquiredAt: String(data.acquiredAt ?? ''), purpose: String(data.purpose ?? ''),
    };
  } catch {
    return undefined;
  }
}

/** Whether the owner recorded in a lock file is certainly gone. */
export function isStale(path: string, owner: LockOwner | undefined, staleMs = DEFAULT_STALE_MS): boolean {
  let mtimeMs: number;
  try {
    mtimeMs = statSync(path).mtimeMs;
  } catch {
    return false; // vanished: not ours to judge, the caller retries
  }
  if (!owner) {
    // Unreadable or half-written (the owner died between create and write): stale once it is not brand new.
    return Date.now() - mtimeMs > 2000;
  }
  if (owner.hostname !== hostname()) return Date.now() - mtimeMs > staleMs;
  if (!pidAlive(owner.pid)) return true;
  const start = processStartTime(owner.pid);
  return owner.startTime !== null && start !== null && start !== owner.startTime;
}

function describeOwner(owner: LockOwner | undefined): string {
  if (!owner) return 'another process';
  return `process ${owner.pid} on ${owner.hostname}${owner.purpose ? ` (${owner.purpose})` : ''}, since ${owner.acquiredAt}`;
}

function tryCreate(path: string, owner: LockOwner): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o644);
  } catch (error) {
    if (isErrno(error, 'EEXIST')) return false;
    throw new CudaenvError(`cannot create the lock ${path}: ${(error as Error).message}`, {hint: 'Check the permissions of the cudaenv store (CUDAENV_DIR).'});
  }
  try {
    writeSync(fd, JSON.stringify(owner));
  } catch (error) {
    // A full disk: the lock file exists, empty. It is removed (an empty one would hold others for a
    // while), and the error names it (write(2) errors carry no path).
    closeSync(fd);
    rmSync(path, {force: true});
    if (isErrno(error) && typeof error.path !== 'string') Object.assign(error, {path, message: `${error.message} '${path}'`});
    throw error;
  }
  closeSync(fd);
  return true;
}

/**
 * Removes a stale lock. A guard file serialises takeovers: without it, two waiters that
 * both saw the dead owner could each delete the lock the other had just created.
 */
function takeOver(path: string, seen: LockOwner | undefined, staleMs: number): void {
  const guard = `${path}.takeover`;
  try {
    if (Date.now() - statSync(guard).mtimeMs > TAKEOVER_STALE_MS) rmSync(guard, {force: true});
  } catch {
    // no guard
  }
  let fd: number;
  try {
    fd = openSync(guard, 'wx');
  } catch (error) {
    if (isErrno(error, 'EEXIST')) return; // another waiter is taking over; retry later
    throw error;
  }
  closeSync(fd);
  try {
    const now = readLockOwner(path);
    const same = JSON.stringify(now) === JSON.stringify(seen);
    if (same && isStale(path, now, staleMs)) rmSync(path, {force: true});
  } finally {
    rmSync(guard, {force: true});
  }
}

/**
 * Removes every lock in `locksDir` whose owner is certainly gone (killed, crashed, rebooted
 * away), and takeover guards left by a waiter that died: a killed run's locks on archives the
 * next run does not need would otherwise stay until something needed them. Live owners' locks
 * are left alone. Returns the names removed.
 */
export function reclaimStaleLocks(locksDir: string, staleMs = DEFAULT_STALE_MS): string[] {
  let names: string[];
  try {
    names = readdirSync(locksDir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const path = join(locksDir, name);
    try {
      if (name.endsWith('.lock.takeover')) {
        if (Date.now() - statSync(path).mtimeMs > TAKEOVER_STALE_MS) {
          rmSync(path, {force: true});
          removed.push(name);
        }
        continue;
      }
      if (!name.endsWith('.lock')) continue;
      const owner = readLockOwner(path);
      if (!isStale(path, owner, staleMs)) continue;
      takeOver(path, owner, staleMs);
      try {
        statSync(path);
      } catch {
        removed.push(name);
      }
    } catch {
      // a lock that vanished or cannot be read now: its owner or the next run deals with it
    }
  }
  return removed;
}

/** Takes the lock `name` in `locksDir`, waiting for a live owner unless `wait` is false. */
export async function acquireLock(locksDir: string, name: string, options: LockOptions = {}): Promise<Lock> {
  const path = lockPath(locksDir, name);
  const staleMs = options.staleMs ?? DEFAULT_STALE_MS;
  const pollMs = options.pollMs ?? 200;
  mkdirSync(locksDir, {recursive: true});
  const owner: LockOwner = {
    pid: process.pid, hostname: hostname(), startTime: processStartTime(process.pid),
    acquiredAt: new Date().toISOString(), purpose: options.purpose ?? name,
  };
  const started = Date.now();
  let announced = false;
  for (;;) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (tryCreate(path, owner)) return heldLock(path, owner, staleMs);
    const current = readLockOwner(path);
    if (isStale(path, current, staleMs)) {
      takeOver(path, current, staleMs);
      continue;
    }
    if (options.wait === false) {
      throw new CudaenvError(`${options.purpose ?? name} is locked by ${describeOwner(current)}`, {
        hint: `Wait for it to finish. If no such process runs, remove ${path}.`, code: 'locked',
      });
    }
    if (options.timeoutMs !== undefined && Date.now() - started > options.timeoutMs) {
      throw new CudaenvError(`gave up after ${Math.round(options.timeoutMs / 1000)} s waiting for ${describeOwner(current)} to release ${path}`, {
        hint: 'Try again when it has finished.', code: 'locked',
      });
    }
    if (!announced) {
      announced = true;
      options.onWait?.(current);
    }
    await new Promise<void>((r) => {
      const done = (): void => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', done);
        r();
      };
      const timer = setTimeout(done, pollMs);
      options.signal?.addEventListener('abort', done, {once: true});
    });
  }
}

function heldLock(path: string, owner: LockOwner, staleMs: number): Lock {
  // Keep the mtime fresh so processes on other hosts do not take a live lock over.
  const timer = setInterval(() => {
    try {
      const now = new Date();
      utimesSync(path, now, now);
    } catch {
      // the lock was removed under us; nothing sensible to do from a timer
    }
  }, Math.max(1000, Math.floor(staleMs / 3)));
  timer.unref();
  let released = false;
  // Dying of an unexpected error releases the lock at once (the next run could take it over anyway).
  const forget = onFatalExit(() => lock.release());
  const lock: Lock = {
    path,
    release(): void {
      if (released) return;
      released = true;
      forget();
      clearInterval(timer);
      // Remove only our own lock: after a takeover by mistake the file may be someone else's.
      const current = readLockOwner(path);
      if (current && current.pid === owner.pid && current.hostname === owner.hostname && current.acquiredAt === owner.acquiredAt) {
        rmSync(path, {force: true});
      }
    },
  };
  return lock;
}
