import {createServer, type IncomingMessage, type Server} from 'node:http';
import type {AddressInfo} from 'node:net';

/**
 * A loopback stand-in for the Actions cache service, so the bundled @actions/cache really tars,
 * uploads, looks up and downloads. Both protocols the library speaks:
 * - v2 (github.com today: ACTIONS_CACHE_SERVICE_V2 with ACTIONS_RESULTS_URL): twirp JSON calls
 *   GetCacheEntryDownloadURL (exact key, then the newest prefix match of each restore key),
 *   CreateCacheEntry (a signed upload URL; not ok when the key exists), FinalizeCacheEntryUpload
 *   (with the size), the archive PUT to the signed URL by the Azure storage client (Azurite-style
 *   path /<account>/<container>/<blob>) and the GET of the signed download URL;
 * - v1 (ACTIONS_CACHE_URL, as GHES): `_apis/artifactcache` GET cache?keys=&version= (204 on a
 *   miss), POST caches (reserve; 409 when the key exists), PATCH caches/<id> (a Content-Range
 *   chunk), POST caches/<id> (commit, with the size), and GET of the archiveLocation.
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
    const lookup = (version: string | null, keys: string[]) => {
      const pool = entries.filter((e) => e.committed && e.version === version);
      for (const key of keys) {
        const hit = pool.find((e) => e.key === key) ?? pool.filter((e) => e.key.startsWith(key)).sort((a, b) => b.time - a.time)[0];
        if (hit) return hit;
      }
      return undefined;
    };
    const twirp = /^\/twirp\/github\.actions\.results\.api\.v1\.CacheService\/(\w+)$/.exec(url.pathname);
    if (req.method === 'POST' && twirp) {
      const r = JSON.parse(data.toString()) as {key: string; version: string; restore_keys?: string[]; size_bytes?: string};
      if (twirp[1] === 'GetCacheEntryDownloadURL') {
        const hit = lookup(r.version, [r.key, ...(r.restore_keys ?? [])]);
        return json(200, hit ? {ok: true, signed_download_url: `${base}devstoreaccount1/actions-cache/${hit.id}?sig=download`, matched_key: hit.key} : {ok: false});
      }
      if (twirp[1] === 'CreateCacheEntry') {
        if (entries.some((e) => e.key === r.key && e.version === r.version)) return json(200, {ok: false, message: `cache entry ${r.key} already exists`});
        const id = nextId++;
        entries.push({id, key: r.key, version: r.version, data: Buffer.alloc(0), committed: false, time: 0});
        return json(200, {ok: true, signed_upload_url: `${base}devstoreaccount1/actions-cache/${id}?sig=upload`});
      }
      if (twirp[1] === 'FinalizeCacheEntryUpload') {
        const entry = entries.find((e) => e.key === r.key && e.version === r.version && !e.committed);
        if (!entry || Number(r.size_bytes) !== entry.data.length) return json(200, {ok: false, message: `size ${r.size_bytes} is not what was uploaded`});
        entry.committed = true;
        entry.time = ++clock;
        return json(200, {ok: true, entry_id: String(entry.id)});
      }
      return json(404, {code: 'bad_route', msg: `no method ${twirp[1]}`});
    }
    const blob = /^\/devstoreaccount1\/actions-cache\/(\d+)$/.exec(url.pathname);
    const blobEntry = blob ? entries.find((e) => e.id === Number(blob[1])) : undefined;
    if (blobEntry && req.method === 'PUT' && url.searchParams.get('sig') === 'upload' && !blobEntry.committed) {
      blobEntry.data = data;
      res.writeHead(201, {'etag': `"0x${blobEntry.id}"`, 'last-modified': new Date().toUTCString(), 'x-ms-request-id': String(blobEntry.id), 'x-ms-version': '2024-11-04', 'x-ms-request-server-encrypted': 'true'}).end();
      return;
    }
    if (blobEntry && req.method === 'GET' && url.searchParams.get('sig') === 'download' && blobEntry.committed) {
      res.writeHead(200, {'content-type': 'application/octet-stream', 'content-length': blobEntry.data.length}).end(blobEntry.data);
      return;
    }
    const m = /^\/_apis\/artifactcache\/caches\/(\d+)$/.exec(url.pathname);
    if (req.method === 'GET' && url.pathname === '/_apis/artifactcache/cache') {
      const hit = lookup(url.searchParams.get('version'), (url.searchParams.get('keys') ?? '').split(','));
      return hit ? json(200, {cacheKey: hit.key, scope: 'refs/heads/main', archiveLocation: `${base}download/${hit.id}`}) : json(204);
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
