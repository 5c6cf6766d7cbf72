import {CudaenvError} from '../errors.js';

/** Back-off between attempts: 250 ms, 500 ms, 1 s, 2 s... (CUDAENV_RETRY_DELAY_MS sets the first step). */
export function retryDelayMs(attempt: number, env: NodeJS.ProcessEnv = process.env): number {
  const base = Number(env.CUDAENV_RETRY_DELAY_MS ?? 250);
  const step = Number.isFinite(base) && base >= 0 ? base : 250;
  return Math.min(step * 2 ** attempt, 8000);
}

export const MAX_ATTEMPTS = 5;

/**
 * Statuses another attempt may cure, as curl's --retry counts them: 5xx, 408 (the server timed the
 * request out) and 429 (rate limited: CDNs and Artifactory say so, with Retry-After).
 */
export function transientStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/** The longest Retry-After cudaenv waits out by itself; a longer one ends the install, saying when to try again. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** Retry-After (RFC 9110 10.2.3) in ms: delay-seconds or an HTTP-date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // The three date forms HTTP allows all start with the day's name.
  if (!/^[A-Za-z]/.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The wait a transient answer's Retry-After asks for (undefined: none); one longer than cudaenv
 * waits by itself ends the download here (waitTooLong).
 */
export function askedWait(where: string, status: number, header: string | string[] | undefined): number | undefined {
  const wait = retryAfterMs(header);
  if (wait !== undefined && wait > MAX_RETRY_AFTER_MS) throw waitTooLong(where, status, wait);
  return wait;
}

/** The wait before the next attempt: the back-off, or longer when the server asked for it. */
export function waitBeforeRetry(attempt: number, retryAfter: number | undefined): number {
  return Math.max(retryDelayMs(attempt), retryAfter ?? 0);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, {once: true});
  });
}

/** A server that asks to come back later than cudaenv waits: one line saying when. */
export function waitTooLong(where: string, status: number, retryAfter: number, now = Date.now()): CudaenvError {
  const wait = retryAfter >= 3_600_000 ? `${(retryAfter / 3_600_000).toFixed(1)} h` : retryAfter >= 120_000 ? `${Math.round(retryAfter / 60_000)} min` : `${Math.round(retryAfter / 1000)} s`;
  const at = new Date(now + retryAfter).toISOString().replace(/\.\d+Z$/, 'Z');
  return new CudaenvError(`${where} answered HTTP ${status} and asks to wait ${wait} (Retry-After), longer than cudaenv waits by itself (${MAX_RETRY_AFTER_MS / 1000} s)`, {
    hint: `Run the command again after ${at}: a part already downloaded is kept and resumed. Or use another mirror (--mirror).`, code: 'network',
  });
}
