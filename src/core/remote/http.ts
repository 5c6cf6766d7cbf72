import type {Dispatcher} from 'undici';

/**
 * undici, loaded on first use (it costs start-up time commands like `ls` must not pay),
 * with one dispatcher that follows redirects (undici 7 dropped `maxRedirections`).
 */
let cached: Promise<{request: typeof import('undici').request; dispatcher: Dispatcher}> | undefined;

export function httpClient(): Promise<{request: typeof import('undici').request; dispatcher: Dispatcher}> {
  cached ??= import('undici').then(({Agent, interceptors, request}) => ({
    request,
    dispatcher: new Agent({connect: {timeout: 30_000}, headersTimeout: 60_000, bodyTimeout: 60_000})
      .compose(interceptors.redirect({maxRedirections: 5})),
  }));
  return cached;
}

/** Network failures worth another try: resets, timeouts, a body cut short. */
export function isTransient(error: unknown): boolean {
  const code = (error as {code?: string} | undefined)?.code ?? '';
  return /^(ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|EAI_AGAIN|ENETUNREACH|EHOSTUNREACH|UND_ERR_SOCKET|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT|UND_ERR_CLOSED|ERR_STREAM_PREMATURE_CLOSE|UND_ERR_RES_CONTENT_LENGTH_MISMATCH)$/.test(code) ||
    /other side closed|premature close|socket hang up|terminated/i.test((error as Error | undefined)?.message ?? '');
}
