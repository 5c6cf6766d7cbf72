// Static file server for bench/install.mjs, in its own process so the timed commands
// (run synchronously by the benchmark) never wait on the benchmark's own event loop.
// Usage: node bench/install-serve.mjs DIR  -> prints the port, serves until killed.
import {createReadStream, statSync} from 'node:fs';
import {createServer} from 'node:http';
import {join, normalize} from 'node:path';

const root = process.argv[2];
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
  res.writeHead(200, {'content-length': size, 'content-type': 'application/octet-stream'});
  createReadStream(file, {highWaterMark: 1 << 20}).pipe(res);
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
