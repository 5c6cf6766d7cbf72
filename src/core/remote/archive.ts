import {spawn, type ChildProcess} from 'node:child_process';
import {createHash} from 'node:crypto';
import {constants, createReadStream, mkdirSync, renameSync, rmSync, statSync, statfsSync, type WriteStream} from 'node:fs';
import {open} from 'node:fs/promises';
import {basename, join} from 'node:path';
import type {Readable, Writable} from 'node:stream';
import {finished} from 'node:stream/promises';
import {CudaenvError} from '../errors.js';
import {escapeControl} from '../text/control.js';
import {onFatalExit} from '../fatal-cleanup.js';
import {acquireLock} from '../store/lock.js';
import type {Artifact} from './manifest.js';
import {mirrorLocation, type Mirror} from './mirror.js';
import {remoteBytes} from './source.js';
import {archiveLockName} from './cache.js';
import {checkpoint} from './checkpoint.js';
import {ArchiveNoRoom, ArchiveRefused, ArchiveTruncated, TarGuard, type GuardStats} from './tar-guard.js';
import {formatBytes} from '../text/bytes.js';

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

/**
 * How far an archive may expand: EXPANSION_FACTOR times its size in the manifest (the download,
 * compressed), plus EXPANSION_FLOOR for small archives. Measured on a CUDA 13.0 toolkit's own
 * files, tarred and compressed with `xz -6` as NVIDIA's archives are: libraries 4.2x, executables
 * 4.4x, headers 13.7x (a header-only archive such as cuda_cccl is the worst case). 32 leaves more
 * than twice that margin, and still refuses an xz bomb (a few hundred KB of zeros that declare
 * gigabytes: 7000x) at the header of its first large file.
 */
export const EXPANSION_FACTOR = 32;
export const EXPANSION_FLOOR = 64 << 20;

export function expansionLimit(size: number): number {
  return EXPANSION_FLOOR + EXPANSION_FACTOR * size;
}

/** The bytes free under `dir` for this user (undefined where statfs cannot tell). */
function freeBytes(dir: string): number | undefined {
  try {
    const st = statfsSync(dir);
    return st.bavail * st.bsize;
  } catch {
    return undefined;
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
  const guard = new TarGuard({
    maxBytes: expansionLimit(artifact.size),
    maxWhy: `${EXPANSION_FACTOR} times the ${artifact.size} bytes the manifest gives the archive, plus ${formatBytes(EXPANSION_FLOOR)}`,
    freeBytes: freeBytes(job.destDir),
  });
  const xzErr = collect(xz);
  const tarErr = collect(tar);
  let failure: unknown;
  const fail = (error: unknown): void => {
    // A refused entry explains everything after it (xz killed by SIGPIPE, tar's stdin closed).
    // So does an archive that does not fit on the disk.
    const stops = (e: unknown): boolean => e instanceof ArchiveRefused || e instanceof ArchiveNoRoom;
    if (failure === undefined || (stops(error) && !stops(failure))) failure = error;
  };
  const xzExit = exitOf(xz);
  const tarExit = exitOf(tar);
  const tarFailed = (code: number): CudaenvError => {
    const why = tarErr().trim() || `tar exited with ${code}`;
    if (diskFull(job.destDir)) {
      return new CudaenvError(`${component}: the disk is full while extracting ${url} into ${job.destDir} (${why})`, {
        hint: `Nothing was installed. Free space in the cudaenv store (CUDAENV_DIR), on the file system of ${job.destDir}, and try again; the verified download is kept in the cache.`, code: 'disk-full',
      });
    }
    return new CudaenvError(`${component}: extracting ${url} failed: ${why}`, {hint: 'Check the space and permissions of the cudaenv store.', code: 'extract-failed'});
  };
  // Dying of an unexpected error stops them before the stage they write into is removed.
  const forgetChildren = onFatalExit(() => {
    xz.kill('SIGKILL');
    tar.kill('SIGKILL');
  });
  void Promise.all([xzExit, tarExit]).then(forgetChildren);
  const piped = relay(xz.stdout!, guard, tar.stdin!).catch(fail);
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

  let part: WriteStream | undefined;
  let partError: unknown;
  const hash = createHash('sha256');
  let bytes = 0;
  let lastReport = 0;
  const report = (stage: Stage, force = false): void => {
    const now = Date.now();
    if (!force && now - lastReport < 200) return;
    lastReport = now;
    job.onProgress?.({stage, bytes, total: artifact.size, fromCache});
  };
  /** Counts and hashes a chunk and hands it to xz (and to the part): the caller awaits what it returns, if anything. */
  const feed = (chunk: Buffer): Promise<void> | undefined => {
    if (failure !== undefined) throw failure;
    if (partError !== undefined) throw partError;
    bytes += chunk.length;
    if (bytes > artifact.size) {
      throw new VerifyError(`${component}: ${url} is larger than the ${artifact.size} bytes its manifest gives`, {
        hint: 'The mirror serves a different file than its manifest describes; nothing was installed.', code: 'size-mismatch',
      });
    }
    hash.update(chunk);
    report(fromCache ? 'extract' : 'download');
    // Both writes queue the chunk; only a full queue (xz or the disk behind) makes the reader wait.
    const xzFull = !xz.stdin!.write(chunk) && xz.stdin!.writableLength >= PIPE_QUEUE;
    const partFull = part !== undefined && !part.write(chunk);
    if (xzFull || partFull) return Promise.all([xzFull && drained(xz.stdin!), partFull && drained(part!)]).then(() => undefined);
    return undefined;
  };

  try {
    job.onProgress?.({stage: fromCache ? 'extract' : 'download', bytes: 0, total: artifact.size, fromCache});
    if (fromCache) {
      for await (const chunk of createReadStream(cacheFile, {highWaterMark: 1 << 20, signal: job.signal})) await feed(chunk as Buffer);
    } else {
      // Parts of a previous run go to xz first; this run's bytes are appended to the part as they come.
      let have = sizeOf(partFile) ?? 0;
      if (have > artifact.size) {
        rmSync(partFile, {force: true});
        have = 0;
      }
      if (have > 0) {
        for await (const chunk of createReadStream(partFile, {end: have - 1, highWaterMark: 1 << 20, signal: job.signal})) await feed(chunk as Buffer);
      }
      // A write stream batches the appends (one writev for what arrived while the last write
      // ran) instead of a thread-pool round trip per chunk; its queue is bounded like xz's.
      // O_NOFOLLOW: a link planted at the .part name (a shared store) is an error, never a file written through.
      part = (await open(partFile, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o644)).createWriteStream({highWaterMark: 2 << 20});
      part.on('error', (error: NodeJS.ErrnoException) => {
        // A write through the descriptor fails without a path (ENOSPC): name the part file.
        if (typeof error.path !== 'string') Object.assign(error, {path: partFile, message: `${error.message} '${partFile}'`});
        partError ??= error;
      });
      let first = true;
      for await (const chunk of remoteBytes(job.mirror, artifact.relativePath, have, job.signal, {
        size: artifact.size,
        onRetry: (r) => job.onProgress?.({stage: 'download', bytes, total: artifact.size, fromCache, note: `retry ${r.attempt} after ${r.reason}`}),
      })) {
        const wait = feed(chunk);
        if (wait) await wait;
        if (first) {
          first = false;
          // The first bytes are on disk before anyone is told the download runs (a run killed now leaves a part to resume).
          await new Promise<void>((resolve) => part!.write(EMPTY, () => resolve()));
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
      part.end();
      await finished(part);
      part = undefined;
      renameSync(partFile, cacheFile); // verified: now it may be reused
    }
    report('extract', true);
    const [xzCode, tarCode] = await Promise.all([xzExit, tarExit, piped]);
    if (failure instanceof ArchiveRefused || failure instanceof ArchiveNoRoom) throw failure;
    if (xzCode !== 0) {
      xzFailed = true;
      throw new Error('xz');
    }
    if (tarCode !== 0) throw tarFailed(tarCode);
    if (failure !== undefined) throw failure;
    return guard.stats;
  } catch (error) {
    xz.kill('SIGKILL');
    tar.kill('SIGKILL');
    await Promise.allSettled([xzExit, tarExit, piped]);
    if (part) {
      part.destroy();
      await finished(part).catch(() => undefined);
      // Opened before the mirror answered (a 404, a refused connection): with no byte in it, it is
      // nothing to resume, and `cudaenv cache` would list it as an interrupted download.
      if (sizeOf(partFile) === 0) rmSync(partFile, {force: true});
    }
    const cause = failure instanceof ArchiveRefused || failure instanceof ArchiveNoRoom ? failure : error;
    if (cause instanceof ArchiveNoRoom) {
      throw new CudaenvError(`${component}: the files of ${url} add up to ${formatBytes(cause.needed)} or more, and the disk under ${job.destDir} has ${formatBytes(cause.free)} free`, {
        hint: 'Nothing was installed (the extraction stopped before it filled the disk). Free space in the cudaenv store (CUDAENV_DIR) and try again; what was downloaded is kept and reused.', code: 'disk-full',
      });
    }
    if (cause instanceof ArchiveRefused) {
      // A hostile archive is worth nothing, even half of it; nor whole: a small one (an xz bomb
      // of 300 KB) is often downloaded, verified and moved into the cache before the extraction
      // meets the entry that is refused (the CI machine under load did), or came from the cache.
      rmSync(partFile, {force: true});
      rmSync(cacheFile, {force: true});
      throw new CudaenvError(`${component}: the archive ${url} is unsafe: ${cause.message}`, {
        hint: 'Nothing was installed. The mirror serves a tampered or broken archive; use another mirror.', code: 'archive-refused',
      });
    }
    // tar that stopped by itself (a full disk, a permission) closes its input first: the relay,
    // then xz (SIGPIPE), then the feeding loop fail after it, and tar's own status says why. A
    // full disk explains any of those; another tar failure only what has no reason of its own
    // (a corrupt xz stream, which tar then sees cut short, is reported as that).
    const tarStopped = tar.exitCode !== null && tar.exitCode !== 0 ? tar.exitCode : null;
    if (tarStopped !== null && diskFull(job.destDir)) throw tarFailed(tarStopped);
    if (error instanceof CudaenvError && error.code !== 'failed') throw error;
    if (xzFailed || error instanceof ArchiveTruncated || failure instanceof ArchiveTruncated) {
      throw new CudaenvError(`${component}: cannot decompress ${url}: ${xzErr().trim() || 'the archive ends too early'}`, {
        hint: 'The archive is corrupt although its checksum matches the manifest: the mirror publishes a broken file.', code: 'archive-corrupt',
      });
    }
    if (job.signal.aborted) throw job.signal.reason;
    if (error instanceof CudaenvError) throw error;
    if (tarStopped !== null) throw tarFailed(tarStopped);
    if ((error as NodeJS.ErrnoException).code === 'ENOSPC') {
      const where = (error as NodeJS.ErrnoException).path ?? job.cacheDir;
      throw new CudaenvError(`${component}: the disk is full while installing from ${url} (writing ${where})`, {hint: `Free space on the file system of ${where} (the cudaenv store, CUDAENV_DIR) and try again; what was downloaded is kept and reused.`, code: 'disk-full', cause: error});
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

/**
 * What a child wrote to stderr (the first 4000 characters), its lines kept: tar and xz quote
 * the archive's names in it, so within each line control characters are shown escaped.
 */
function collect(child: ChildProcess): () => string {
  let text = '';
  child.stderr?.on('data', (d: Buffer) => {
    if (text.length < 4000) text += d.toString();
  });
  return () => text.trim().split('\n').map(escapeControl).join('\n');
}

const EMPTY = Buffer.alloc(0);

/**
 * How much may wait in Node for a child's stdin (xz's, tar's) before the side that feeds it
 * pauses. A pipe's own 16 KiB mark made each 64 KiB chunk wait for the child to take it, so
 * every process in the chain ran in short bursts; 1 MiB lets each run longer at a time, and
 * bounds memory all the same (2 MiB per archive).
 */
const PIPE_QUEUE = 1 << 20;

/** Resolves once `stream` takes more (or is closed: its owner reports why). */
function drained(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

/**
 * xz's output through the guard into tar's stdin, with back-pressure: xz waits while tar's
 * pipe is full. By hand rather than stream.pipeline with the guard as a Transform: every
 * decompressed byte of an install passes here, and per chunk this is one call of the guard
 * and (mostly) one write, where a Transform adds its own buffering, events and ticks. On an
 * error both ends are destroyed (tar sees its input end; xz gets SIGPIPE), as pipeline does.
 */
function relay(from: Readable, guard: TarGuard, to: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let full = false;
    const settle = (error?: unknown): void => {
      if (settled) return;
      settled = true;
      if (error === undefined) {
        resolve();
        return;
      }
      from.destroy();
      to.destroy();
      reject(error);
    };
    const emit = (bytes: Buffer): void => {
      if (!to.write(bytes) && to.writableLength >= PIPE_QUEUE) full = true;
    };
    from.on('data', (chunk: Buffer) => {
      if (settled) return;
      try {
        guard.pass(chunk, emit);
      } catch (error) {
        settle(error);
        return;
      }
      if (full) {
        full = false;
        from.pause();
        to.once('drain', () => from.resume());
      }
    });
    from.on('end', () => {
      try {
        guard.finish();
      } catch (error) {
        settle(error);
        return;
      }
      to.end();
    });
    from.on('error', settle);
    to.on('error', settle);
    to.on('finish', () => settle());
    // GNU tar exits once it has read the end-of-archive blocks, which may be before this side
    // ends its input: that close is the normal end. Before them it is tar giving up.
    to.on('close', () => settle(guard.ended ? undefined : Object.assign(new Error('tar closed its input early'), {code: 'ERR_STREAM_PREMATURE_CLOSE'})));
  });
}
