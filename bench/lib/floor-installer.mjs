// The floor for issue 11's install target: the cheapest Node.js installer that still does what
// the issue asks of any installer beyond the anchor's `curl | xz -dc | tar -x`: it reads the
// manifest, hashes every byte (verified) and appends it to a `.part` file (resumable). Nothing
// else: no CLI framework, no retries, no tar guard (xz writes straight into tar through a kernel
// pipe), no staging, no merge, no receipt. If this is slower than the parallel pipelines, so is
// any installer that verifies and can resume, on that machine.
// Usage: node bench/lib/floor-installer.mjs MIRROR_URL LABEL OUT_DIR COMPONENT...
import {spawn} from 'node:child_process';
import {createHash} from 'node:crypto';
import {createWriteStream, mkdirSync} from 'node:fs';
import http from 'node:http';
import {join} from 'node:path';

const [base, label, out, ...names] = process.argv.slice(2);
const agent = new http.Agent({keepAlive: true});

function get(url) {
  return new Promise((resolve, reject) => {
    http.get(url, {agent}, (res) => (res.statusCode === 200 ? resolve(res) : reject(new Error(`${url}: HTTP ${res.statusCode}`)))).on('error', reject);
  });
}

async function text(url) {
  const res = await get(url);
  let body = '';
  for await (const c of res) body += c;
  return body;
}

const manifest = JSON.parse(await text(`${base}redistrib_${label}.json`));
mkdirSync(out, {recursive: true});

async function installOne(name) {
  const artifact = manifest[name]['linux-x86_64'];
  const dest = join(out, name);
  mkdirSync(dest);
  const tar = spawn('tar', ['-x', '-f', '-', '-C', dest, '--strip-components=1', '--no-same-owner'], {stdio: ['pipe', 'ignore', 'inherit']});
  const xz = spawn('xz', ['-dc'], {stdio: ['pipe', tar.stdin, 'inherit']});
  tar.stdin.destroy(); // xz holds the pipe's write end now
  const tarDone = new Promise((resolve, reject) => tar.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`tar exited ${code}`)))));
  const hash = createHash('sha256');
  const part = createWriteStream(join(out, `${name}.part`));
  const res = await get(base + artifact.relative_path);
  for await (const chunk of res) {
    hash.update(chunk);
    part.write(chunk);
    if (!xz.stdin.write(chunk)) await new Promise((resolve) => xz.stdin.once('drain', resolve));
  }
  xz.stdin.end();
  await new Promise((resolve, reject) => part.end((error) => (error ? reject(error) : resolve())));
  if (hash.digest('hex') !== artifact.sha256) throw new Error(`${name}: checksum mismatch`);
  await tarDone;
}

await Promise.all(names.map(installOne));
agent.destroy();
