import {createReadStream} from 'node:fs';
import {CudaenvError, isErrno} from '../errors.js';
import {accessHint, discard, downloadLimits, formatSeconds, httpGet, isTransient, networkHint, readBody} from './http.js';
import {mirrorLocation, type Mirror} from './mirror.js';
import {askedWait, MAX_ATTEMPTS, sleep, transientStatus, waitBeforeRetry} from './retry.js';

export interface SourceEvents {
  /** A transient failure; the download resumes from `offset` after `delayMs`. */
  onRetry?: (info: {attempt: number; offset: number; delayMs: number; reason: string}) => void;
  /** The file's size, when known (from the manifest): a body that ends before it is resumed, not accepted. */
  size?: number;
}

/** A failure that another attempt cannot fix (404, 403, a mirror file that is missing). */
export class PermanentDownloadError extends CudaenvError {}

function optionalNumber(value: string | undefined): number | undefined {
  return value !== undefined && /^\d+$/.test(value.trim()) ? Number(value) : undefined;
}

/** Content-Range: `bytes START-END/TOTAL`, or `bytes *` + `/TOTAL` (on a 416); TOTAL may be `*`. */
function parseContentRange(value: string | string[] | undefined): {start?: number; total?: number} {
  const m = /^\s*bytes\s+(?:(\d+)-\d+|\*)\/(\d+|\*)\s*$/i.exec(String(value ?? ''));
  if (!m) return {};
  return {start: m[1] === undefined ? undefined : Number(m[1]), total: m[2] === '*' ? undefined : Number(m[2])};
}

/**
 * The bytes of `rel` from `offset` on, as they arrive. Over HTTP a broken connection, a body
 * that ends short of the known size, or a 5xx answer is retried with back-off, resuming with
 * a Range request where the last bytes stopped (the attempts count again from zero after a
 * try that brought bytes). A server that ignores Range, answers a range it was not asked
 * for, or refuses a range (416) that is not simply "already complete" is read from the start
 * without Range, the known bytes skipped.
 */
export async function* remoteBytes(mirror: Mirror, rel: string, offset: number, signal: AbortSignal, events: SourceEvents = {}): AsyncGenerator<Buffer> {
  const where = mirrorLocation(mirror, rel);
  if (mirror.kind === 'file') {
    try {
      for await (const chunk of createReadStream(where, {start: offset, highWaterMark: 1 << 20, signal})) yield chunk as Buffer;
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw new PermanentDownloadError(`cannot read ${where}: ${(error as Error).message}`, {
        hint: isErrno(error, 'ENOENT') ? `The mirror ${mirror.display} lacks this archive; is the copy complete?` : 'Check the mirror directory.',
        code: isErrno(error, 'ENOENT') ? 'not-found' : 'mirror',
      });
    }
    return;
  }
  let position = offset;
  let useRange = true;
  // One deadline for the whole file, retries included (CUDAENV_DOWNLOAD_TIMEOUT); the speed
  // limit is readBody's, per response.
  const limits = downloadLimits();
  const deadline = limits.timeoutMs > 0 ? Date.now() + limits.timeoutMs : undefined;
  const tooLong = (): CudaenvError => new CudaenvError(
    `the download of ${where} did not finish within ${formatSeconds(limits.timeoutMs)} (CUDAENV_DOWNLOAD_TIMEOUT): ${position}${events.size === undefined ? '' : ` of ${events.size}`} bytes arrived`, {
      hint: 'The part downloaded so far is kept in the cache and the next install resumes it. Run it again (on a faster link, or with a larger CUDAENV_DOWNLOAD_TIMEOUT in seconds), or use another mirror (--mirror).',
      code: 'network',
    });
  for (let attempt = 0; ; attempt++) {
    if (events.size !== undefined && position >= events.size) return;
    if (deadline !== undefined && Date.now() >= deadline) throw tooLong();
    const before = position;
    let slow = false;
    let reason: string;
    let retryAfter: number | undefined;
    try {
      const ranged = position > 0 && useRange;
      const res = await httpGet(where, {headers: ranged ? {range: `bytes=${position}-`} : {}, signal});
      const total = res.statusCode === 200 ? optionalNumber(res.headers['content-length']) : [206, 416].includes(res.statusCode) ? parseContentRange(res.headers['content-range']).total : undefined;
      if (events.size !== undefined && total !== undefined && total !== events.size) {
        discard(res);
        throw new PermanentDownloadError(`${where} has ${total} bytes, its manifest says ${events.size}`, {
          hint: 'The mirror serves a different file than its manifest describes; nothing was installed. Use another mirror.', code: 'size-mismatch',
        });
      }
      let skip = 0;
      if (res.statusCode === 206) {
        const {start} = parseContentRange(res.headers['content-range']);
        const asked = ranged ? position : 0;
        if (start === undefined || start > asked || (!ranged && start !== 0)) {
          // Not the range asked for (nor one that covers it): read the whole file instead.
          discard(res);
          if (!ranged) {
            throw new PermanentDownloadError(`${where} answered a plain request with a partial body (${String(res.headers['content-range'] ?? 'no Content-Range')})`, {
              hint: 'The mirror (or a proxy in front of it) is broken; use another mirror.', code: 'mirror',
            });
          }
          useRange = false;
          attempt--;
          continue;
        }
        skip = asked - start + (ranged ? 0 : position);
      } else if (res.statusCode === 200) {
        skip = position; // Range ignored (or not sent): the whole body again
      } else if (res.statusCode === 416 && ranged) {
        discard(res);
        // Asked at (or past) the end. Only an end exactly where our bytes stop means "complete".
        if (parseContentRange(res.headers['content-range']).total === position && events.size === undefined) return;
        useRange = false;
        attempt--;
        continue;
      }
      if (res.statusCode === 200 || res.statusCode === 206) {
        for await (const raw of readBody(res, {speedLimit: limits.speedLimit, speedTimeMs: limits.speedTimeMs, deadline})) {
          let chunk = raw;
          if (skip > 0) {
            if (chunk.length <= skip) {
              skip -= chunk.length;
              continue;
            }
            chunk = chunk.subarray(skip);
            skip = 0;
          }
          position += chunk.length;
          yield chunk;
        }
        if (events.size === undefined || position >= events.size) return;
        // A body delimited by the end of the connection cannot tell a cut from its end: the size can.
        throw Object.assign(new Error(`the body ended after ${position} of ${events.size} bytes`), {code: 'EBODYSHORT'});
      }
      discard(res);
      if (!transientStatus(res.statusCode)) {
        throw new PermanentDownloadError(`${where} answered HTTP ${res.statusCode}`, {
          hint: res.statusCode === 404 ? `The mirror ${mirror.display} lacks this archive although its manifest names it.`
            : accessHint(res.statusCode, mirror.base) ?? 'Check the mirror and your access to it.',
          code: res.statusCode === 404 ? 'not-found' : 'mirror',
        });
      }
      reason = `HTTP ${res.statusCode}`;
      retryAfter = askedWait(where, res.statusCode, res.headers['retry-after']);
    } catch (error) {
      // A permanent failure, or a setting that cannot work (a proxy URL), is not retried.
      if (error instanceof CudaenvError || signal.aborted) throw signal.aborted && !(error instanceof CudaenvError) ? signal.reason : error;
      if ((error as {code?: string}).code === 'EDEADLINE') throw tooLong();
      slow = (error as {code?: string}).code === 'ESLOW';
      if (!isTransient(error)) {
        throw new CudaenvError(`cannot download ${where}: ${(error as Error).message}`, {hint: networkHint(error, 'Check the network and the mirror.'), code: 'network'});
      }
      reason = (error as Error).message || String((error as {code?: string}).code);
    }
    // Progress: a flaky link gets its full set of attempts again. A body too slow brought bytes
    // too, but trickling them is no progress (else a server sending a byte now and then would
    // be retried for ever).
    if (position > before && !slow) attempt = 0;
    if (attempt + 1 >= MAX_ATTEMPTS) {
      throw new CudaenvError(`cannot download ${where}: ${reason} (${MAX_ATTEMPTS} attempts)`, {
        hint: slow
          ? 'The part downloaded so far is kept in the cache and the next install resumes it: run it again later, or use another mirror (--mirror). The minimum rate is CUDAENV_SPEED_LIMIT bytes/s over CUDAENV_SPEED_TIME seconds (0 turns it off).'
          : 'Try again later: the part already downloaded is kept and the next install resumes it.',
        code: 'network',
      });
    }
    const delayMs = waitBeforeRetry(attempt, retryAfter);
    if (deadline !== undefined && Date.now() + delayMs >= deadline) throw tooLong();
    events.onRetry?.({attempt: attempt + 1, offset: position, delayMs, reason});
    await sleep(delayMs, signal);
  }
}
