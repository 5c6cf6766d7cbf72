import type {Agent, ClientRequest, IncomingHttpHeaders, IncomingMessage, RequestOptions} from 'node:http';
import {isIP} from 'node:net';
import type {Duplex} from 'node:stream';
import {extraCaOption} from './extra-ca.js';
import {proxyFor, type ProxyChoice} from './proxy.js';
import {CudaenvError} from '../errors.js';
import {redactCredentials} from '../text/redact.js';
import {basicAuthorization} from './basic-auth.js';

/**
 * HTTP GET on Node's own `http`/`https` modules, not undici.
 *
 * Why: undici 7 (the last major that runs on Node 20) crashes the whole process with an
 * uncaught `assert(!this.paused)` (nodejs/undici#5360, fixed only in undici 8 = Node 22)
 * when a response body is paused by back-pressure - xz is slower than the network - and the
 * server's FIN arrives: exactly what `python3 -m http.server`, HTTP/1.0 servers and proxies
 * that answer `Connection: close` do at the end of every body. The assertion fires inside a
 * socket 'end' handler, so no try/catch of ours can see it. Node's IncomingMessage has
 * handled a paused body meeting the end of its connection for years, so the installer can
 * keep streaming with back-pressure (constant memory) instead of buffering whole archives.
 *
 * The modules are imported on first use (`https` loads TLS, which commands like `ls` must
 * not pay for at start-up).
 *
 * Proxies (`https_proxy`, `http_proxy`, `no_proxy`: src/core/remote/proxy.ts): an http URL
 * is asked of the proxy in absolute form; an https one goes through a CONNECT tunnel, inside
 * which TLS is spoken with the mirror itself (its certificate is checked as without a proxy).
 */

export interface HttpResponse {
  statusCode: number;
  headers: IncomingHttpHeaders;
  /** The body; read it with `readBody` (idle timeout) or drop it with `discard`. */
  body: IncomingMessage;
  /** The URL that answered, after redirects. */
  url: string;
}

export interface GetOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export const MAX_REDIRECTS = 5;
const CONNECT_TIMEOUT_MS = 30_000;
const HEADERS_TIMEOUT_MS = 60_000;
/** A body that delivers nothing for this long while we wait for it is given up (and retried). */
export const BODY_IDLE_TIMEOUT_MS = 60_000;

type Modules = {http: typeof import('node:http'); https: typeof import('node:https'); tls: typeof import('node:tls'); agents: Map<string, Agent>};
let loaded: Promise<Modules> | undefined;

function modules(): Promise<Modules> {
  loaded ??= Promise.all([import('node:http'), import('node:https'), import('node:tls')]).then(([http, https, tls]) => ({
    http, https, tls,
    // keep-alive sockets are unref'ed while idle, so they never hold the process open
    agents: new Map<string, Agent>([['http:', new http.Agent({keepAlive: true})], ['https:', new https.Agent({keepAlive: true, ca: extraCa(tls)})]]),
  }));
  return loaded;
}

/** The trusted roots when the launcher deferred NODE_EXTRA_CA_CERTS (./extra-ca.ts); undefined: Node's own. */
function extraCa(tls: typeof import('node:tls')): string[] | undefined {
  return extraCaOption(tls.rootCertificates, (line) => process.stderr.write(`cudaenv: warning: ${line}\n`));
}

function codedError(message: string, code: string): Error {
  return Object.assign(new Error(message), {code});
}

function proxyHeaders(proxy: ProxyChoice): Record<string, string> {
  return proxy.authorization ? {'proxy-authorization': proxy.authorization} : {};
}

/** What a proxy's refusal means to the user; 502-504 (it cannot reach the mirror now) is worth a retry. */
function proxyRefusal(proxy: ProxyChoice, target: string, status: number, message: string | undefined): Error {
  const what = `${status}${message ? ` ${message}` : ''}`;
  if (status === 407) return codedError(`the proxy ${proxy.display} (from ${proxy.variable}) asks for credentials (${what})`, 'EPROXYAUTH');
  if (status >= 502 && status <= 504) return codedError(`the proxy ${proxy.display} (from ${proxy.variable}) could not reach ${target} (${what})`, 'EPROXYGATEWAY');
  return codedError(`the proxy ${proxy.display} (from ${proxy.variable}) refused the connection to ${target} (${what})`, 'EPROXYREFUSED');
}

/** An error on the way to the proxy names it (once); its code (ECONNREFUSED...) still decides on a retry. */
function viaProxy(proxy: ProxyChoice, error: Error & {proxy?: string}): Error {
  if (error.proxy !== undefined) return error;
  error.proxy = proxy.display;
  if (!/^EPROXY/.test((error as {code?: string}).code ?? '')) error.message = `cannot reach the proxy ${proxy.display} (from ${proxy.variable}): ${error.message}`;
  return error;
}

/**
 * An https agent whose connections are CONNECT tunnels through `proxy`, one agent per proxy
 * so that keep-alive reuses tunnels to the same mirror.
 */
function tunnelAgent(mods: Modules, proxy: ProxyChoice): Agent {
  const key = `tunnel ${proxy.host}:${proxy.port} ${proxy.authorization ?? ''}`;
  const cached = mods.agents.get(key);
  if (cached) return cached;
  const {http, https, tls} = mods;
  class TunnelAgent extends https.Agent {
    // Node's Agent waits for the callback when createConnection returns nothing.
    override createConnection(args: RequestOptions, callback?: (error: Error | null, socket: Duplex) => void): undefined {
      const options = args as RequestOptions & {host?: string; port?: number; servername?: string};
      const done = (error: Error | null, socket?: Duplex): void => callback?.(error, socket as Duplex);
      const target = `${options.host}:${options.port}`;
      const connect: ClientRequest = http.request({host: proxy.host, port: proxy.port, method: 'CONNECT', path: target, headers: {host: target, ...proxyHeaders(proxy)}, agent: false});
      connect.once('connect', (res, socket) => {
        if (res.statusCode !== 200) {
          socket.destroy();
          done(proxyRefusal(proxy, target, res.statusCode ?? 0, res.statusMessage));
          return;
        }
        const host = options.host ?? '';
        const servername = options.servername || (isIP(host) ? undefined : host);
        done(null, tls.connect({...(options as object), socket, servername} as import('node:tls').ConnectionOptions));
      });
      connect.once('error', (error) => done(viaProxy(proxy, error)));
      connect.end();
      return undefined;
    }
  }
  const agent = new TunnelAgent({keepAlive: true, ca: extraCa(tls)});
  mods.agents.set(key, agent);
  return agent;
}


/**
 * The URL without its user and password, and the Basic `Authorization` they make (a mirror behind
 * Artifactory or Nexus: https://USER:TOKEN@host/...). Sent as a header, never in a request line:
 * through an HTTP proxy the absolute URL is the request target, and must carry no userinfo.
 */
export function splitCredentials(url: URL): {target: URL; authorization?: string} {
  const authorization = basicAuthorization(url);
  if (authorization === undefined) return {target: url};
  if (authorization === null) {
    throw new CudaenvError(`the user name or password in the mirror URL ${redactCredentials(url.href)} has a broken percent-encoding`, {
      hint: 'Percent-encode special characters of the user name and password (@ as %40, : as %3A, % as %25).', code: 'usage', exitCode: 2,
    });
  }
  const target = new URL(url.href);
  target.username = '';
  target.password = '';
  return {target, authorization};
}

/** One request, no redirects. The request and response never emit an unhandled 'error'. */
async function requestOnce(url: URL, options: GetOptions): Promise<HttpResponse> {
  const mods = await modules();
  const {http, https, agents} = mods;
  const proxy = proxyFor(url);
  const credentials = splitCredentials(url);
  url = credentials.target;
  const headers = {'user-agent': 'cudaenv', ...(credentials.authorization ? {authorization: credentials.authorization} : {}), ...options.headers};
  return new Promise<HttpResponse>((resolve, reject) => {
    const req = !proxy
      ? (url.protocol === 'https:' ? https : http).request(url, {method: 'GET', headers, agent: agents.get(url.protocol), signal: options.signal})
      : url.protocol === 'https:'
        ? https.request(url, {method: 'GET', headers, agent: tunnelAgent(mods, proxy), signal: options.signal})
        // The absolute URL as the request target: RFC 9112 3.2.2, how HTTP proxies are asked.
        : http.request({host: proxy.host, port: proxy.port, method: 'GET', path: url.href, headers: {host: url.host, ...headers, ...proxyHeaders(proxy)}, agent: agents.get('http:'), signal: options.signal});
    // A late error (the signal fires after the body was read, a reset on an idle socket) must not crash the process.
    req.on('error', (error) => {
      clearTimeout(connectTimer);
      clearTimeout(headersTimer);
      reject(proxy ? viaProxy(proxy, error) : error);
    });
    const connectTimer = setTimeout(() => req.destroy(codedError(`no connection to ${url.host} within ${CONNECT_TIMEOUT_MS / 1000} s`, 'ETIMEDOUT')), CONNECT_TIMEOUT_MS);
    const headersTimer = setTimeout(() => req.destroy(codedError(`${url.host} did not answer within ${HEADERS_TIMEOUT_MS / 1000} s`, 'ETIMEDOUT')), HEADERS_TIMEOUT_MS);
    req.on('socket', (socket) => {
      if (socket.connecting) socket.once('connect', () => clearTimeout(connectTimer));
      else clearTimeout(connectTimer);
    });
    req.on('response', (res) => {
      clearTimeout(connectTimer);
      clearTimeout(headersTimer);
      res.on('error', () => undefined); // readers see errors through their iterator
      if (proxy && url.protocol === 'http:' && res.statusCode === 407) {
        res.resume();
        reject(proxyRefusal(proxy, url.host, 407, res.statusMessage));
        return;
      }
      resolve({statusCode: res.statusCode ?? 0, headers: res.headers, body: res, url: url.href});
    });
    req.end();
  });
}

/** GET `url`, following up to MAX_REDIRECTS redirects (NVIDIA serves archives through a CDN). */
export async function httpGet(url: string, options: GetOptions = {}): Promise<HttpResponse> {
  let current = new URL(url);
  for (let hop = 0; ; hop++) {
    const res = await requestOnce(current, options);
    const location = res.headers.location;
    if (![301, 302, 303, 307, 308].includes(res.statusCode) || !location) return res;
    discard(res);
    if (hop >= MAX_REDIRECTS) throw codedError(`${redactCredentials(url)} redirects more than ${MAX_REDIRECTS} times`, 'ETOOMANYREDIRECTS');
    const next = new URL(location, current);
    if (next.protocol !== 'http:' && next.protocol !== 'https:') throw codedError(`${redactCredentials(current.href)} redirects to ${redactCredentials(next.href)}, which is not http(s)`, 'EBADREDIRECT');
    // TLS is what makes an https mirror's manifests and archives the mirror's: a redirect to plain
    // http would let anyone on the path answer instead. Plain http is used only where the user named
    // an http:// mirror, never reached by a redirect from https.
    if (current.protocol === 'https:' && next.protocol === 'http:') {
      throw codedError(`${redactCredentials(current.href)} redirects to ${redactCredentials(next.href)}: a redirect from https to plain http is refused`, 'EDOWNGRADE');
    }
    // The mirror's credentials go with a redirect to the same origin only (as curl without
    // --location-trusted): never to the CDN or another host the mirror sends the client to.
    if (next.origin === current.origin && !next.username && !next.password) {
      next.username = current.username;
      next.password = current.password;
    }
    current = next;
  }
}

/** Drops a response's body without reading it (the socket is reused when it can be). */
export function discard(res: HttpResponse): void {
  res.body.resume();
}

/**
 * How slow a download may be before it is given up, as curl's --speed-limit, --speed-time and
 * --max-time: below `speedLimit` bytes per second over `speedTimeMs` (only the time spent
 * waiting for the network counts, not the time xz or the disk take), or still running after
 * `timeoutMs` in all (per file, retries included). Without these a server that sends one byte
 * every few seconds (under the idle timeout) would hold an install forever.
 *
 * CUDAENV_SPEED_LIMIT (bytes per second, default 1024; 0 turns it off), CUDAENV_SPEED_TIME
 * (seconds, default 60) and CUDAENV_DOWNLOAD_TIMEOUT (seconds per file, default 21600: 6 h,
 * enough for the largest archive, about 3 GB, at 150 KB/s; 0 turns it off). Fractions are allowed.
 */
export interface DownloadLimits {
  speedLimit: number;
  speedTimeMs: number;
  timeoutMs: number;
}

export const DEFAULT_SPEED_LIMIT = 1024;
export const DEFAULT_SPEED_TIME_S = 60;
export const DEFAULT_DOWNLOAD_TIMEOUT_S = 6 * 3600;

function limitSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, unit: string): number {
  const text = env[name]?.trim();
  if (text === undefined || text === '') return fallback;
  if (!/^\d+(\.\d+)?$/.test(text)) {
    throw new CudaenvError(`${name}=${JSON.stringify(text)} is not a number of ${unit}`, {
      hint: `Set ${name} to a number of ${unit} (0 turns the limit off), or unset it for the default (${fallback}).`, code: 'usage', exitCode: 2,
    });
  }
  return Number(text);
}

/** The limits in effect (see DownloadLimits). */
export function downloadLimits(env: NodeJS.ProcessEnv = process.env): DownloadLimits {
  const speedTime = limitSetting(env, 'CUDAENV_SPEED_TIME', DEFAULT_SPEED_TIME_S, 'seconds');
  return {
    speedLimit: limitSetting(env, 'CUDAENV_SPEED_LIMIT', DEFAULT_SPEED_LIMIT, 'bytes per second'),
    speedTimeMs: Math.max(1, speedTime * 1000),
    timeoutMs: limitSetting(env, 'CUDAENV_DOWNLOAD_TIMEOUT', DEFAULT_DOWNLOAD_TIMEOUT_S, 'seconds') * 1000,
  };
}

/** A duration for messages: 0.5 s, 60 s, 6 h. */
export function formatSeconds(ms: number): string {
  if (ms >= 7_200_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 120_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Number((ms / 1000).toFixed(ms < 10_000 ? 1 : 0))} s`;
}

export interface BodyOptions {
  /** Waiting longer than this for the next chunk: ETIMEDOUT (default BODY_IDLE_TIMEOUT_MS). */
  idleMs?: number;
  /** Bytes per second and the window (ms of waiting) below which the body fails with ESLOW (default: downloadLimits()). */
  speedLimit?: number;
  speedTimeMs?: number;
  /** Date.now() after which the body fails with EDEADLINE (the caller's per-file deadline). */
  deadline?: number;
  /** How to name the deadline in its message (default: "CUDAENV_DOWNLOAD_TIMEOUT"). */
  deadlineWhy?: string;
}

/**
 * The body's chunks as they arrive, with back-pressure: a slow consumer pauses the socket.
 * Waiting longer than `idleMs` for the next chunk destroys the body with ETIMEDOUT (time the
 * consumer spends between chunks does not count); so does a rate below the speed limit
 * (ESLOW, measured on the waiting time alone) and the deadline (EDEADLINE, wall time). A
 * number is `idleMs`. Leaving the loop early closes the body.
 */
export async function* readBody(res: HttpResponse, options: number | BodyOptions = {}): AsyncGenerator<Buffer> {
  const o: BodyOptions = typeof options === 'number' ? {idleMs: options} : options;
  const idleMs = o.idleMs ?? BODY_IDLE_TIMEOUT_MS;
  const defaults = o.speedLimit === undefined || o.speedTimeMs === undefined ? downloadLimits() : undefined;
  const speedLimit = o.speedLimit ?? defaults!.speedLimit;
  const speedTimeMs = o.speedTimeMs ?? defaults!.speedTimeMs;
  const iterator = res.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  // One timer for the whole body, restarted per chunk (a new timer per chunk cost more than
  // the chunk's bytes); while the consumer holds a chunk it only re-arms itself.
  let waiting = false;
  const timer = setTimeout(function expire() {
    if (waiting) res.body.destroy(codedError(`no data from ${res.url} for ${Math.round(idleMs / 1000)} s`, 'ETIMEDOUT'));
    else timer.refresh();
  }, idleMs);
  timer.unref();
  const deadline = o.deadline === undefined ? undefined : setTimeout(() => {
    res.body.destroy(codedError(`the download of ${res.url} did not finish in the time allowed (${o.deadlineWhy ?? 'CUDAENV_DOWNLOAD_TIMEOUT'})`, 'EDEADLINE'));
  }, Math.max(0, o.deadline - Date.now()));
  deadline?.unref();
  // The speed window runs on the time spent waiting for the network: xz or a full disk behind
  // the consumer slow the socket down through back-pressure, which is not the server's doing.
  let waited = 0;
  let windowStart = 0;
  let windowBytes = 0;
  try {
    for (;;) {
      timer.refresh();
      waiting = true;
      const since = Date.now();
      const next = await iterator.next();
      waiting = false;
      waited += Date.now() - since;
      if (next.done) return;
      windowBytes += next.value.length;
      const span = waited - windowStart;
      if (speedLimit > 0 && span >= speedTimeMs) {
        if (windowBytes * 1000 < speedLimit * span) {
          throw codedError(`${res.url} sent ${windowBytes} bytes in ${formatSeconds(span)}, slower than the minimum of ${speedLimit} bytes/s over ${formatSeconds(speedTimeMs)} (CUDAENV_SPEED_LIMIT, CUDAENV_SPEED_TIME)`, 'ESLOW');
        }
        windowStart = waited;
        windowBytes = 0;
      }
      yield next.value;
    }
  } finally {
    clearTimeout(timer);
    clearTimeout(deadline);
    await iterator.return?.();
  }
}

/** Network failures worth another try: resets, timeouts, a body too slow (ESLOW), refused connections, a body cut short. */
export function isTransient(error: unknown): boolean {
  const code = (error as {code?: string} | undefined)?.code ?? '';
  return /^(ECONNRESET|ECONNREFUSED|ECONNABORTED|EPIPE|ETIMEDOUT|ESLOW|EAI_AGAIN|ENETUNREACH|ENETDOWN|EHOSTUNREACH|EHOSTDOWN|ERR_STREAM_PREMATURE_CLOSE|HPE_INVALID_EOF_STATE|EBODYSHORT|EPROXYGATEWAY)$/.test(code) ||
    /socket hang up|premature close/i.test((error as Error | undefined)?.message ?? '');
}

/** What to do about a mirror that answers 401 or 403: it wants credentials, or refused the ones in its URL. */
export function accessHint(status: number, mirrorUrl: string): string | undefined {
  if (status !== 401 && status !== 403) return undefined;
  const given = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(mirrorUrl);
  return given
    ? `The mirror refused the credentials in its URL (HTTP ${status}): check the user name and password or token (percent-encoded) in it.`
    : `The mirror asks for credentials (HTTP ${status}): give them in its URL, https://USER:PASSWORD@HOST/... (percent-encode special characters); cudaenv sends them only to that host and never prints the password.`;
}

/** What to do about a network failure that is not transient: a TLS trust problem gets its own advice. */
export function networkHint(error: unknown, fallback: string): string {
  const code = (error as {code?: string} | undefined)?.code ?? '';
  if (code === 'ESLOW' || code === 'EDEADLINE') {
    return 'The mirror (or the network to it) is too slow: try again later, or use another mirror (--mirror). The limits are CUDAENV_SPEED_LIMIT bytes/s over CUDAENV_SPEED_TIME seconds, and CUDAENV_DOWNLOAD_TIMEOUT seconds per file (0 turns either off).';
  }
  if (code === 'EDOWNGRADE') {
    return 'The mirror (or something between it and you) sends an https download to plain http, where anyone on the path could change it; cudaenv never follows that. Ask the mirror\'s owner to serve it over https, or, if plain http is what you mean to trust, give that http:// URL itself as the mirror (--mirror, CUDAENV_MIRROR, the mirror setting).';
  }
  if (code === 'EPROXYAUTH') {
    return 'Give the proxy\'s credentials in its URL: HTTPS_PROXY=http://USER:PASSWORD@HOST:PORT (percent-encode special characters), or list the mirror\'s host in NO_PROXY to connect directly.';
  }
  if (/^EPROXY/.test(code) || (error as {proxy?: string} | undefined)?.proxy !== undefined) {
    return 'Check the proxy settings (https_proxy, http_proxy, all_proxy, no_proxy) and that the proxy lets you reach the mirror; `env | grep -i proxy` shows them.';
  }
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS/.test(code)) {
    return 'The mirror\'s TLS certificate is not trusted. If your network inspects TLS with its own certificate authority, point NODE_EXTRA_CA_CERTS at that CA\'s PEM file.';
  }
  return fallback;
}
