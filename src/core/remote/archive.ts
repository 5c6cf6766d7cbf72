import {spawn, type ChildProcess} from 'node:child_process';
import {createHash} from 'node:crypto';
import {createReadStream, mkdirSync, renameSync, rmSync, statSync, statfsSync} from 'node:fs';
import {open, type FileHandle} from 'node:fs/promises';
import {basename, join} from 'node:path';
import {pipeline} from 'node:stream/promises';
import {CudaenvError} from '../errors.js';
import {onFatalExit} from '../fatal-cleanup.js';
import {acquireLock} from '../store/lock.js';
import type {Artifact} from './manifest.js';
import {mirrorLocation, type Mirror} from './mirror.js';
import {remoteBytes} from './source.js';
import {archiveLockName} from './cache.js';
import {checkpoint} from './checkpoint.js';
import {ArchiveRefused, ArchiveTruncated, TarGuard, type GuardStats} from './tar-guard.js';

export type Stage = 'queued' | 'download' | 'verify' | 'extract' | 'merge' | 'done' | 'failed';

export interface ArchiveProgress {
  stage: Stage;
  bytes: number;
  total: number;
  fromCache: boolean;
  note?: string;
}

export interface ArchiveJob {
  component: string;
  mirror: Mirror;
  artifact: Artifact;
  cacheDir: string;
  locksDir: string;
  /** Where the archive's contents go (created fresh; the top `<name>-archive/` dir is stripped). */
  destDir: string;
  signal: AbortSignal;
  onProgress?: (p: ArchiveProgress) => void;
}

export interface ArchiveResult {
  fromCache: boolean;
  cacheFile: string;
  stats: GuardStats;
}

class VerifyError extends CudaenvError {}

/** The cache name of a verified archive; `.part` is appended while it downloads. */
export function cacheFileName(artifact: Artifact): string {
  return `${artifact.sha256.slice(0, 16)}-${basename(artifact.relativePath).replace(/[^A-Za-z0-9._+-]/g, '_')}`;
}

function sizeOf(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/**
 * Streams one archive into `destDir`: bytes from the cache (verified earlier) or from the
 * mirror (appended to `<cache>.part`, resuming a part a previous run left), each chunk
 * hashed, counted and fed to `xz -dc`, whose output goes through TarGuard into GNU tar.
 * The part becomes the cache file only once size and sha256 match the manifest. A cache
 * file or an old part that fails verification is discarded and the archive fetched again.
 */
export async function fetchAndExtract(job: ArchiveJob): Promise<ArchiveResult> {
  const {artifact} = job;
  mkdirSync(job.cacheDir, {recursive: true});
  const cacheFile = join(job.cacheDir, cacheFileName(artifact));
  const lock = await acquireLock(job.locksDir, archiveLockName(artifact.sha256), {purpose: `download of ${basename(artifact.relativePath)}`, signal: job.signal});
  try {
    for (let round = 0; ; round++) {
      const fromCache = sizeOf(cacheFile) !== undefined;
      const oldPart = fromCache ? 0 : (sizeOf(`${cacheFile}.part`) ?? 0);
      try {
        const stats = await streamOnce(job, cacheFile, fromCache);
        return {fromCache, cacheFile, stats};
      } catch (error) {
        // Bytes from an earlier run (cache or part) may be what is wrong: retry once from nothing.
        if (error instanceof VerifyError && round === 0 && (fromCache || oldPart > 0)) {
          rmSync(cacheFile, {force: true});
          rmSync(`${cacheFile}.part`, {force: true});
          continue;
        }
        throw error;
      }
    }
  } finally {
    lock.release();
  }
}

async function streamOnce(job: ArchiveJob, cacheFile: string, fromCache: boolean): Promise<GuardStats> {
  const {artifact, component} = job;
  const url = mirrorLocation(job.mirror, artifact.relativePath);
  const partFile = `${cacheFile}.part`;
  rmSync(job.destDir, {recursive: true, force: true});
  mkdirSync(job.destDir, {recursive: true});

  const xz = spawn('xz', ['-dc'], {stdio: ['pipe', 'pipe', 'pipe']});
  const tar = spawn('tar', ['-x', '-f', '-', '-C', job.destDir, '--strip-components=1', '--no-same-owner', '--warning=no-timestamp', '--warning=no-unknown-keyword'], {stdio: ['pipe', 'ignore', 'pipe']});
  const guard = new TarGuard();
  const xzErr = collect(xz);
  const tarErr = collect(tar);
  let failure: unknown;
  const fail = (error: unknown): void => {
    // A refused entry explains everything after it (xz killed by SIGPIPE, tar's stdin closed).
    if (failure === undefined || (error instanceof ArchiveRefused && !(failure instanceof ArchiveRefused))) failure = error;
  };
  const xzExit = exitOf(xz);
  const tarExit = exitOf(tar);
  // Dying of an unexpected error stops them before the stage they write into is removed.
  const forgetChildren = onFatalExit(() => {
    xz.kill('SIGKILL');
    tar.kill('SIGKILL');
  });
  void Promise.all([xzExit, tarExit]).then(forgetChildren);
  const piped = pipeline(xz.stdout!, guard, tar.stdin!).catch(fail);
  xz.stdin!.on('error', () => undefined); // EPIPE when xz stops early: its exit status tells why
  let xzFailed = false;
  void xzExit.then((code) => {
    if (code !== 0 && failure === undefined) {
      xzFailed = true;
      fail(new CudaenvError(`${component}: cannot decompress ${url}: ${xzErr().trim() || `xz exited with ${code}`}`, {
        hint: 'The archive is corrupt although its checksum matches the manifest: the mirror publishes a broken file.', code: 'archive-corrupt',
      }));
    }
  });

  let part: FileHandle | undefined;
  const hash = createHash('sha256');
  let bytes = 0;
  let lastReport = 0;
  const report = (stage: Stage, force = false): void => {
    const now = Date.now();
    if (!force && now - lastReport < 200) return;
    lastReport = now;
    job.onProgress?.({stage, bytes, total: artifact.size, fromCache});
  };
  const feed = async (chunk: Buffer): Promise<void> => {
    if (failure !== undefined) throw failure;
    bytes += chunk.length;
    if (bytes > artifact.size) {
      throw new VerifyError(`${component}: ${url} is larger than the ${artifact.size} bytes its manifest gives`, {
        hint: 'The mirror serves a different file than its manifest describes; nothing was installed.', code: 'size-mismatch',
      });
    }
    hash.update(chunk);
    if (!xz.stdin!.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          xz.stdin!.off('drain', done);
          xz.stdin!.off('close', done);
          resolve();
        };
        xz.stdin!.on('drain', done);
        xz.stdin!.on('close', done);
      });
    }
    report(fromCache ? 'extract' : 'download');
  };

  try {
    job.onProgress?.({stage: fromCache ? 'extract' : 'download', bytes: 0, total: artifact.size, fromCache});
    if (fromCache) {
      for await (const chunk of createReadStream(cacheFile, {highWaterMark: 1 << 20, signal: job.signal})) await feed(chunk as Buffer);
    } else {
      let have = sizeOf(partFile) ?? 0;
      if (have > artifact.size) {
        rmSync(partFile, {force: true});
        have = 0;
      }
      if (have > 0) {
        for await (const chunk of createReadStream(partFile, {end: have - 1, highWaterMark: 1 << 20, signal: job.signal})) await feed(chunk as Buffer);
      }
      part = await open(partFile, 'a');
      let first = true;
      for await (const chunk of remoteBytes(job.mirror, artifact.relativePath, have, job.signal, {
        size: artifact.size,
        onRetry: (r) => job.onProgress?.({stage: 'download', bytes, total: artifact.size, fromCache, note: `retry ${r.attempt} after ${r.reason}`}),
      })) {
        await Promise.all([part.write(chunk), feed(chunk)]);
        if (first) {
          first = false;
          await checkpoint('download');
        }
      }
    }
    xz.stdin!.end();
    report('verify', true);
    if (bytes !== artifact.size) {
      throw new VerifyError(`${component}: ${url} has ${bytes} bytes, its manifest says ${artifact.size}`, {
        hint: 'The download was cut short or the mirror is inconsistent; nothing was installed. Try again.', code: 'size-mismatch',
      });
    }
    const digest = hash.digest('hex');
    if (digest !== artifact.sha256) {
      if (part) rmSync(partFile, {force: true});
      throw new VerifyError(`${component}: checksum mismatch for ${url}: expected sha256 ${artifact.sha256}, got ${digest}`, {
        hint: 'The file is corrupt or was replaced; nothing was installed. Try again, or use another mirror.', code: 'checksum-mismatch',
      });
    }
    if (part) {
      // No fsync: a cache file is hashed again on every use, so one damaged by a power
      // loss is found and fetched again; kill -9 cannot damage it (the rename is atomic).
      await part.close();
      part = undefined;
      renameSync(partFile, cacheFile); // verified: now it may be reused
    }
    report('extract', true);
    const [xzCode, tarCode] = await Promise.all([xzExit, tarExit, piped]);
    if (failure instanceof ArchiveRefused) throw failure;
    if (xzCode !== 0) {
      xzFailed = true;
      throw new Error('xz');
    }
    if (tarCode !== 0) {
      const why = tarErr().trim() || `tar exited with ${tarCode}`;
      if (diskFull(job.destDir)) {
        throw new CudaenvError(`${component}: the disk is full while extracting ${url} (${why})`, {
          hint: 'Nothing was installed. Free space in the cudaenv store (CUDAENV_DIR) and try again; the verified download is kept in the cache.', code: 'disk-full',
        });
      }
      throw new CudaenvError(`${component}: extracting ${url} failed: ${why}`, {hint: 'Check the space and permissions of the cudaenv store.', code: 'extract-failed'});
    }
    if (failure !== undefined) throw failure;
    return guard.stats;
  } catch (error) {
    xz.kill('SIGKILL');
    tar.kill('SIGKILL');
    await Promise.allSettled([xzExit, tarExit, piped]);
    await part?.close().catch(() => undefined);
    const cause = failure instanceof ArchiveRefused ? failure : error;
    if (cause instanceof ArchiveRefused) {
      rmSync(partFile, {force: true}); // a hostile archive is worth nothing, even half of it
      throw new CudaenvError(`${component}: the archive ${url} is unsafe: ${cause.message}`, {
        hint: 'Nothing was installed. The mirror serves a tampered or broken archive; use another mirror.', code: 'archive-refused',
      });
    }
    if (error instanceof CudaenvError && error.code !== 'failed') throw error;
    if (xzFailed || error instanceof ArchiveTruncated || failure instanceof ArchiveTruncated) {
      throw new CudaenvError(`${component}: cannot decompress ${url}: ${xzErr().trim() || 'the archive ends too early'}`, {
        hint: 'The archive is corrupt although its checksum matches the manifest: the mirror publishes a broken file.', code: 'archive-corrupt',
      });
    }
    if (job.signal.aborted) throw job.signal.reason;
    if (error instanceof CudaenvError) throw error;
    if ((error as NodeJS.ErrnoException).code === 'ENOSPC') {
      throw new CudaenvError(`${component}: the disk is full while installing from ${url}`, {hint: 'Free space in the cudaenv store (CUDAENV_DIR) and try again.', code: 'disk-full', cause: error});
    }
    throw new CudaenvError(`${component}: installing from ${url} failed: ${(error as Error).message}`, {cause: error});
  }
}

/** Whether the file system under `dir` has (practically) no room left. */
function diskFull(dir: string): boolean {
  try {
    const st = statfsSync(dir);
    return st.bavail * st.bsize < 64 * 1024;
  } catch {
    return false;
  }
}

function exitOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.on('error', () => resolve(127));
    child.on('close', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

function collect(child: ChildProcess): () => string {
  let text = '';
  child.stderr?.on('data', (d: Buffer) => {
    if (text.length < 4000) text += d.toString();
  });
  return () => text;
}
