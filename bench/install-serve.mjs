// Static file server for bench/install.mjs, in its own process so the timed commands never
// wait on the benchmark's own event loop.
// Usage: node bench/install-serve.mjs DIR [close]  -> prints the port, serves until killed.
// With `close`, every response carries `Connection: close` (the server closes the connection
// after each body, as python3 -m http.server and HTTP/1.0 proxies do).
import {createReadStream, statSync} from 'node:fs';
import {createServer} from 'node:http';
import {join, normalize} from 'node:path';

const root = process.argv[2];
const close = process.argv[3] === 'close';
const server = createServer((req, res) => {
  const rel = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^\/+/, '') || 'index.html';
  if (rel.startsWith('..')) return res.writeHead(403).end();
  const file = join(root, rel);
  let size;
  try {
    size = statSync(file).size;
  } catch {
    return res.writeHead(404).end();
  }
  res.writeHead(200, {'content-length': size, 'content-type': 'application/octet-stream', ...(close ? {connection: 'close'} : {})});
  createReadStream(file, {highWaterMark: 1 << 20}).pipe(res);
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
