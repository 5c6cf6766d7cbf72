import {readFile, readdir} from 'node:fs/promises';
import {CudaenvError, isErrno} from '../errors.js';
import {accessHint, discard, downloadLimits, httpGet, isTransient, networkHint, readBody} from './http.js';
import {mirrorLocation, type Mirror} from './mirror.js';
import {askedWait, MAX_ATTEMPTS, retryDelayMs, sleep, transientStatus, waitBeforeRetry} from './retry.js';

const MAX_TEXT_BYTES = 16 * 1024 * 1024;

/** Fetches a small text file (index page, manifest) from a mirror; undefined on 404 when `optional`. */
export async function fetchText(mirror: Mirror, rel: string, options: {optional?: boolean; signal?: AbortSignal} = {}): Promise<string | undefined> {
  const {signal} = options;
  const where = mirrorLocation(mirror, rel);
  if (mirror.kind === 'file') {
    try {
      return await readFile(where, 'utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT') && options.optional) return undefined;
      throw new CudaenvError(`cannot read ${where}: ${(error as Error).message}`, {
        hint: isErrno(error, 'ENOENT') ? `Does the mirror ${mirror.display} hold this release?` : 'Check the mirror directory and its permissions.',
        code: isErrno(error, 'ENOENT') ? 'not-found' : 'mirror',
      });
    }
  }
  const limits = downloadLimits();
  const deadline = limits.timeoutMs > 0 ? Date.now() + limits.timeoutMs : undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await httpGet(where, {signal});
      const {statusCode} = res;
      if (statusCode === 200) {
        const chunks: Buffer[] = [];
        let total = 0;
        for await (const chunk of readBody(res, {speedLimit: limits.speedLimit, speedTimeMs: limits.speedTimeMs, deadline})) {
          total += chunk.length;
          if (total > MAX_TEXT_BYTES) throw new CudaenvError(`${where} is larger than ${MAX_TEXT_BYTES} bytes; that is not a redist index or manifest`, {code: 'mirror'});
          chunks.push(chunk);
        }
        return Buffer.concat(chunks).toString('utf8');
      }
      discard(res);
      if (statusCode === 404 && options.optional) return undefined;
      if (transientStatus(statusCode) && attempt + 1 < MAX_ATTEMPTS) {
        await sleep(waitBeforeRetry(attempt, askedWait(where, statusCode, res.headers['retry-after'])), signal);
        continue;
      }
      throw new CudaenvError(`${where} answered HTTP ${statusCode}`, {
        hint: statusCode === 404 ? `Does the mirror ${mirror.display} hold this release? List releases with \`cudaenv ls-remote\`.`
          : accessHint(statusCode, mirror.base) ?? 'Try again later, or use another mirror (--mirror).',
        code: statusCode === 404 ? 'not-found' : 'mirror',
      });
    } catch (error) {
      // Ctrl-C: the request fails with Node's AbortError; the caller's reason says what happened.
      if (signal?.aborted) throw signal.reason;
      if (error instanceof CudaenvError) throw error;
      if (isTransient(error) && attempt + 1 < MAX_ATTEMPTS) {
        await sleep(retryDelayMs(attempt), signal);
        continue;
      }
      throw new CudaenvError(`cannot download ${where}: ${(error as Error).message}`, {
        hint: networkHint(error, 'Check the network connection and the mirror (--mirror, CUDAENV_MIRROR).'), code: 'network',
      });
    }
  }
}

/**
 * The index of a mirror: its index page, or, for a directory mirror without one,
 * the directory's listing.
 */
export async function fetchIndexText(mirror: Mirror, signal?: AbortSignal): Promise<string> {
  if (mirror.kind === 'file') {
    const page = await fetchText(mirror, 'index.html', {optional: true});
    if (page !== undefined) return page;
    try {
      return (await readdir(mirror.dir)).join('\n');
    } catch (error) {
      throw new CudaenvError(`cannot list the mirror directory ${mirror.dir}: ${(error as Error).message}`, {
        hint: 'Check --mirror / CUDAENV_MIRROR.', code: 'mirror',
      });
    }
  }
  return (await fetchText(mirror, '', {signal}))!;
}
