import {createReadStream} from 'node:fs';
import {CudaenvError, isErrno} from '../errors.js';
import {httpClient, isTransient} from './http.js';
import {mirrorLocation, type Mirror} from './mirror.js';
import {MAX_ATTEMPTS, retryDelayMs, sleep} from './retry.js';

export interface SourceEvents {
  /** A transient failure; the download resumes from `offset` after `delayMs`. */
  onRetry?: (info: {attempt: number; offset: number; delayMs: number; reason: string}) => void;
}

/** A failure that another attempt cannot fix (404, 403, a mirror file that is missing). */
export class PermanentDownloadError extends CudaenvError {}

/**
 * The bytes of `rel` from `offset` on, as they arrive. Over HTTP a broken connection or a
 * 5xx answer is retried with back-off, resuming with a Range request where the last bytes
 * stopped; a server that ignores Range is read from the start and the known bytes skipped.
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
  const {request, dispatcher} = await httpClient();
  let position = offset;
  for (let attempt = 0; ; attempt++) {
    let reason: string;
    try {
      const headers: Record<string, string> = position > 0 ? {range: `bytes=${position}-`} : {};
      const {statusCode, headers: rh, body} = await request(where, {dispatcher, headers, signal});
      if (statusCode === 200 || statusCode === 206) {
        let skip = 0;
        if (position > 0 && statusCode === 200) skip = position; // Range ignored: whole body again
        if (statusCode === 206) {
          const m = /^bytes (\d+)-/.exec(String(rh['content-range'] ?? ''));
          if (!m || Number(m[1]) !== position) {
            await body.dump().catch(() => undefined);
            throw new PermanentDownloadError(`${where} answered a range request for byte ${position} with ${String(rh['content-range'] ?? 'no Content-Range')}`, {
              hint: 'The mirror mishandles resumed downloads; delete the .part file in the cache and try again.', code: 'mirror',
            });
          }
        }
        for await (const raw of body as AsyncIterable<Buffer>) {
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
        return;
      }
      await body.dump().catch(() => undefined);
      if (statusCode === 416) {
        // Asked past the end: the partial file is already complete (or bigger than the file).
        return;
      }
      if (statusCode < 500) {
        throw new PermanentDownloadError(`${where} answered HTTP ${statusCode}`, {
          hint: statusCode === 404 ? `The mirror ${mirror.display} lacks this archive although its manifest names it.` : 'Check the mirror and your access to it.',
          code: statusCode === 404 ? 'not-found' : 'mirror',
        });
      }
      reason = `HTTP ${statusCode}`;
    } catch (error) {
      if (error instanceof PermanentDownloadError || signal.aborted) throw signal.aborted && !(error instanceof CudaenvError) ? signal.reason : error;
      if (!isTransient(error)) {
        throw new CudaenvError(`cannot download ${where}: ${(error as Error).message}`, {hint: 'Check the network and the mirror.', code: 'network'});
      }
      reason = (error as Error).message || String((error as {code?: string}).code);
    }
    if (attempt + 1 >= MAX_ATTEMPTS) {
      throw new CudaenvError(`cannot download ${where}: ${reason} (${MAX_ATTEMPTS} attempts)`, {
        hint: 'Try again later: the part already downloaded is kept and the next install resumes it.', code: 'network',
      });
    }
    const delayMs = retryDelayMs(attempt);
    events.onRetry?.({attempt: attempt + 1, offset: position, delayMs, reason});
    await sleep(delayMs, signal);
  }
}
