import {createServer, type IncomingMessage, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';

/**
 * A loopback stand-in for the Actions cache service's v1 REST protocol (`_apis/artifactcache`,
 * the one @actions/cache speaks when ACTIONS_CACHE_URL is set, and GHES still serves), so the
 * bundled @actions/cache really tars, uploads, looks up and downloads: GET cache?keys=&version=
 * (exact key first, then the newest prefix match, per key in order; 204 on a miss), POST caches
 * (reserve; 409 when the key exists), PATCH caches/<id> (a Content-Range chunk), POST caches/<id>
 * (commit, with the size), and GET the archiveLocation it handed out.
 */
export interface CacheServer {
  url: string;
  entries: Array<{id: number; key: string; version: string; data: Buffer; committed: boolean; time: number}>;
  log: string[];
  close(): Promise<void>;
}

function body(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startCacheServer(): Promise<CacheServer> {
  const entries: CacheServer['entries'] = [];
  const log: string[] = [];
  let nextId = 1;
  let clock = 0;
  let base = '';
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const data = await body(req);
    log.push(`${req.method} ${url.pathname}`);
    const json = (status: number, value?: unknown): void => {
      res.writeHead(status, {'content-type': 'application/json'}).end(value === undefined ? undefined : JSON.stringify(value));
    };
    const m = /^\/_apis\/artifactcache\/caches\/(\d+)$/.exec(url.pathname);
    if (req.method === 'GET' && url.pathname === '/_apis/artifactcache/cache') {
      const version = url.searchParams.get('version');
      const pool = entries.filter((e) => e.committed && e.version === version);
      for (const key of (url.searchParams.get('keys') ?? '').split(',')) {
        const hit = pool.find((e) => e.key === key) ?? pool.filter((e) => e.key.startsWith(key)).sort((a, b) => b.time - a.time)[0];
        if (hit) return json(200, {cacheKey: hit.key, scope: 'refs/heads/main', archiveLocation: `${base}download/${hit.id}`});
      }
      return json(204);
    }
    if (req.method === 'POST' && url.pathname === '/_apis/artifactcache/caches') {
      const {key, version} = JSON.parse(data.toString()) as {key: string; version: string};
      if (entries.some((e) => e.key === key && e.version === version)) return json(409, {message: `Cache already exists. Scope: refs/heads/main, Key: ${key}`});
      const id = nextId++;
      entries.push({id, key, version, data: Buffer.alloc(0), committed: false, time: 0});
      return json(201, {cacheId: id});
    }
    if (m && req.method === 'PATCH') {
      const entry = entries.find((e) => e.id === Number(m[1]));
      const range = /^bytes (\d+)-(\d+)\/\*$/.exec(String(req.headers['content-range']));
      if (!entry || !range) return json(400, {message: 'bad upload'});
      const start = Number(range[1]);
      const grown = Buffer.alloc(Math.max(entry.data.length, start + data.length));
      entry.data.copy(grown);
      data.copy(grown, start);
      entry.data = grown;
      return json(204);
    }
    if (m && req.method === 'POST') {
      const entry = entries.find((e) => e.id === Number(m[1]));
      const {size} = JSON.parse(data.toString()) as {size: number};
      if (!entry || size !== entry.data.length) return json(400, {message: `size ${size} is not what was uploaded`});
      entry.committed = true;
      entry.time = ++clock;
      return json(204);
    }
    const dl = /^\/download\/(\d+)$/.exec(url.pathname);
    const entry = dl && entries.find((e) => e.id === Number(dl[1]) && e.committed);
    if (req.method === 'GET' && entry) {
      res.writeHead(200, {'content-type': 'application/octet-stream', 'content-length': entry.data.length}).end(entry.data);
      return;
    }
    json(404, {message: 'not found'});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url: base, entries, log,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
