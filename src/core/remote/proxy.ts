import {BlockList, isIP} from 'node:net';
import {CudaenvError} from '../errors.js';
import {basicAuthorization} from './basic-auth.js';

/**
 * The proxy a download goes through, read from the environment the way curl, pip and conda
 * users set it: `https_proxy` for https URLs, `http_proxy` for http, `all_proxy` for either,
 * each also in upper case (the lower-case name wins); `no_proxy` lists the hosts reached
 * directly. The one exception is curl's: `HTTP_PROXY` in upper case is ignored when the
 * process runs as a CGI script (`REQUEST_METHOD` set), where a client's `Proxy:` request
 * header arrives as that variable (httpoxy).
 */
export interface ProxyChoice {
  host: string;
  port: number;
  /** `Proxy-Authorization` for credentials given in the proxy URL. */
  authorization?: string;
  /** The proxy URL without its password, for messages. */
  display: string;
  /** The variable it came from, for messages. */
  variable: string;
}

function read(env: NodeJS.ProcessEnv, name: string): [string, string] | undefined {
  for (const key of [name, name.toUpperCase()]) {
    if (key === 'HTTP_PROXY' && env.REQUEST_METHOD !== undefined) continue;
    const value = env[key]?.trim();
    if (value) return [key, value];
  }
  return undefined;
}

/** The proxy for `target`, or undefined for a direct connection. Throws on a proxy URL it cannot use. */
export function proxyFor(target: URL, env: NodeJS.ProcessEnv = process.env): ProxyChoice | undefined {
  const scheme = target.protocol === 'https:' ? 'https' : 'http';
  const found = read(env, `${scheme}_proxy`) ?? read(env, 'all_proxy');
  if (!found) return undefined;
  if (bypassed(target, read(env, 'no_proxy')?.[1] ?? '')) return undefined;
  return parseProxy(found[1], found[0]);
}

export function parseProxy(value: string, variable: string): ProxyChoice {
  const problem = (why: string): CudaenvError => new CudaenvError(`${variable}=${value} cannot be used: ${why}`, {
    hint: `Set ${variable} to an HTTP proxy as http://HOST:PORT (credentials as http://USER:PASSWORD@HOST:PORT, percent-encoded), or unset it to connect directly.`,
    code: 'proxy-config',
  });
  let url: URL;
  try {
    // curl's reading: a proxy without a scheme is an HTTP proxy.
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`);
  } catch {
    throw problem('it is not a URL');
  }
  if (url.protocol !== 'http:') throw problem(`cudaenv talks to proxies in plain HTTP (with CONNECT for https mirrors); ${url.protocol.replace(/:$/, '')} proxies are not supported`);
  if (!url.hostname) throw problem('it names no host');
  const authorization = basicAuthorization(url);
  if (authorization === null) throw problem('its user name or password has a broken percent-encoding');
  const display = `http://${url.username ? `${url.username}${url.password ? ':***' : ''}@` : ''}${url.host}`;
  // 1080 is curl's default proxy port.
  return {host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port ? Number(url.port) : 1080, authorization, display, variable};
}

/**
 * Whether `no_proxy` sends `target` straight to the server: `*`; a host name, which also
 * covers its subdomains (a leading `.` or `*.` changes nothing); an IP address or a CIDR
 * block (`10.0.0.0/8`, `fd00::/8`); each optionally with `:PORT`. Entries are separated by
 * commas or blanks, as curl and Go read them.
 */
export function bypassed(target: URL, noProxy: string): boolean {
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  for (const raw of noProxy.split(/[\s,]+/)) {
    let entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return true;
    let entryPort: string | undefined;
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    if (bracketed) {
      entry = bracketed[1]!;
      entryPort = bracketed[2];
    } else if (!entry.includes('/') && (entry.match(/:/g) ?? []).length === 1) {
      [entry, entryPort] = entry.split(':') as [string, string];
    }
    if (entryPort !== undefined && entryPort !== port) continue;
    const slash = entry.indexOf('/');
    if (slash > 0 && isIP(host)) {
      const net = entry.slice(0, slash);
      const bits = Number(entry.slice(slash + 1));
      const family = isIP(net);
      if (family === 0 || family !== isIP(host) || !Number.isInteger(bits)) continue;
      const list = new BlockList();
      try {
        list.addSubnet(net, bits, family === 4 ? 'ipv4' : 'ipv6');
      } catch {
        continue; // a prefix length out of range: an entry that matches nothing
      }
      if (list.check(host, family === 4 ? 'ipv4' : 'ipv6')) return true;
      continue;
    }
    entry = entry.replace(/^\*?\./, '').replace(/\.$/, '');
    if (!entry) continue;
    if (host === entry || (!isIP(host) && host.endsWith(`.${entry}`))) return true;
  }
  return false;
}
