import {execFileSync, spawnSync} from 'node:child_process';
import {createHash} from 'node:crypto';
import {createReadStream, chmodSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http';
import type {AddressInfo} from 'node:net';
import {dirname, join, normalize} from 'node:path';

/**
 * A generated NVIDIA-style redist mirror and a loopback HTTP server for it.
 *
 * Layout as NVIDIA's: `<root>/index.html` listing `redistrib_<label>.json`, manifests in
 * NVIDIA's format (size as a string, md5 and sha256), archives at
 * `<component>/<platform>/<component>-<platform>-<version>-archive.tar.xz` whose entries lie
 * under `<component>-<platform>-<version>-archive/`. Normal archives are made by GNU tar and
 * xz; hostile ones by `makeTar` below, which writes any entry a test wants.
 */

export type FileSpec =
  | string
  | {text: string; mode?: number}
  | {symlink: string}
  | {bytes: Buffer};

export interface ComponentSpec {
  name: string;
  version: string;
  /** Paths relative to the archive's top directory. */
  files?: Record<string, FileSpec>;
  /** A ready tar (uncompressed) to ship instead of `files` (hostile archives). */
  rawTar?: Buffer;
  /** Ship these bytes as the .tar.xz (e.g. a truncated stream); the manifest describes them. */
  rawXz?: Buffer;
  /** Write this sha256 into the manifest instead of the real one. */
  wrongSha256?: boolean;
  platform?: string;
  /** cuDNN style: the platform entry maps cuda<major> variants. */
  variant?: string;
}

export interface ReleaseSpec {
  label: string;
  product?: string;
  components: ComponentSpec[];
}

export function archiveRelPath(c: ComponentSpec): string {
  const platform = c.platform ?? 'linux-x86_64';
  const suffix = c.variant ? `_${c.variant}` : '';
  return `${c.name}/${platform}/${c.name}-${platform}-${c.version}${suffix}-archive.tar.xz`;
}

function writeTree(dir: string, files: Record<string, FileSpec>): void {
  for (const [rel, spec] of Object.entries(files)) {
    const path = join(dir, rel);
    mkdirSync(dirname(path), {recursive: true});
    if (typeof spec === 'string') writeFileSync(path, spec);
    else if ('symlink' in spec) symlinkSync(spec.symlink, path);
    else if ('bytes' in spec) writeFileSync(path, spec.bytes);
    else {
      writeFileSync(path, spec.text);
      if (spec.mode !== undefined) chmodSync(path, spec.mode);
    }
  }
}

/** Builds `<name>-archive.tar.xz` bytes for a component. */
export function buildArchive(work: string, c: ComponentSpec): Buffer {
  if (c.rawXz) return c.rawXz;
  const top = archiveRelPath(c).split('/').pop()!.replace(/\.tar\.xz$/, '');
  if (c.rawTar) return xz(c.rawTar);
  mkdirSync(work, {recursive: true});
  const src = mkdtempSync(join(work, 'src-'));
  mkdirSync(join(src, top), {recursive: true});
  writeTree(join(src, top), c.files ?? {});
  return execFileSync('sh', ['-c', `tar -C "$1" -cf - "$2" | xz -1 -T1 -c`, 'sh', src, top], {maxBuffer: 1 << 30});
}

export function xz(data: Buffer): Buffer {
  const r = spawnSync('xz', ['-1', '-c'], {input: data, maxBuffer: 1 << 30});
  if (r.status !== 0) throw new Error(`xz failed: ${r.stderr}`);
  return r.stdout;
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Writes a release's archives and manifest under `root`; returns the manifest object. */
export function writeRelease(root: string, release: ReleaseSpec, work = `${root}.work`): Record<string, unknown> {
  const manifest: Record<string, unknown> = {
    release_date: '2024-04-03', release_label: release.label, release_product: release.product ?? 'cuda',
  };
  for (const c of release.components) {
    const rel = archiveRelPath(c);
    const bytes = buildArchive(work, c);
    mkdirSync(dirname(join(root, rel)), {recursive: true});
    writeFileSync(join(root, rel), bytes);
    const artifact = {
      relative_path: rel,
      sha256: c.wrongSha256 ? sha256(Buffer.from('not this archive')) : sha256(bytes),
      md5: createHash('md5').update(bytes).digest('hex'),
      size: String(bytes.length),
    };
    const platform = c.platform ?? 'linux-x86_64';
    const existing = manifest[c.name] as Record<string, unknown> | undefined;
    const entry: Record<string, unknown> = existing ?? {name: c.name, license: 'CUDA Toolkit', license_path: `${c.name}/LICENSE.txt`, version: c.version};
    if (c.variant) {
      entry.cuda_variant = [...new Set([...((entry.cuda_variant as string[]) ?? []), c.variant.replace('cuda', '')])];
      entry[platform] = {...(entry[platform] as object ?? {}), [c.variant]: artifact};
    } else {
      entry[platform] = artifact;
    }
    manifest[c.name] = entry;
  }
  writeFileSync(join(root, `redistrib_${release.label}.json`), JSON.stringify(manifest, null, 4));
  return manifest;
}

/** NVIDIA's index page: an HTML directory listing. */
export function writeIndex(root: string, labels: string[]): void {
  const links = labels.map((l) => `<a href="redistrib_${l}.json">redistrib_${l}.json</a>                2024-04-03 12:00   12K`).join('\n');
  writeFileSync(join(root, 'index.html'), `<html><head><title>Index of /compute/cuda/redist/</title></head><body><h1>Index of /compute/cuda/redist/</h1><hr><pre><a href="../">../</a>\n${links}\n</pre><hr></body></html>\n`);
}

// ---- realistic component contents ----

export const NVCC_PROFILE = `
TOP              = $(_HERE_)/..

NVVMIR_LIBRARY_DIR = $(TOP)/$(_NVVM_BRANCH_)/libdevice

LD_LIBRARY_PATH += $(TOP)/lib:
PATH            += $(TOP)/$(_NVVM_BRANCH_)/bin:$(_HERE_):

INCLUDES        +=  "-I$(TOP)/$(_TARGET_DIR_)/include" $(_SPACE_)

LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)/stubs" "-L$(TOP)/$(_TARGET_DIR_)/lib$(_TARGET_SIZE_)"

CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
`;

/**
 * A shell-script nvcc that, like NVIDIA's, reads nvcc.profile next to itself and expands
 * INCLUDES and LIBRARIES relative to its own directory (`_TARGET_SIZE_` 64: lib64), then
 * compiles the C subset of the input with gcc and links libcudart.
 */
export function nvccScript(release: string, build: string): string {
  return `#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
if [ "$1" = "--version" ]; then
  echo "nvcc: NVIDIA (R) Cuda compiler driver"
  echo "Cuda compilation tools, release ${release}, V${build}"
  exit 0
fi
expand() { sed -e "s|\\$(TOP)|$here/..|g" -e "s|\\$(_HERE_)|$here|g" -e 's|\\$(_TARGET_DIR_)/||g' -e 's|\\$(_TARGET_SIZE_)|64|g' -e 's|\\$(_SPACE_)||g' -e 's|"||g'; }
inc=$(sed -n 's/^INCLUDES *+= *//p' "$here/nvcc.profile" | expand)
libs=$(sed -n 's/^LIBRARIES *=+ *//p' "$here/nvcc.profile" | expand)
exec gcc -x c $inc "$@" -x none $libs -lcudart
`;
}

let libCache: {version: string; bytes: Buffer} | undefined;

/** A gcc-built stand-in for libcudart.so.12 (soname libcudart.so.12) exporting cudaRuntimeGetVersion. */
export function buildCudart(work: string, version = '12.4.127'): Buffer {
  if (libCache?.version === version) return libCache.bytes;
  mkdirSync(work, {recursive: true});
  const [maj, min] = version.split('.');
  const c = join(work, 'cudart.c');
  writeFileSync(c, `int cudaRuntimeGetVersion(int *v) { *v = ${Number(maj) * 1000 + Number(min) * 10}; return 0; }\n`);
  const out = join(work, `libcudart.so.${version}`);
  execFileSync('gcc', ['-shared', '-fPIC', `-Wl,-soname,libcudart.so.${maj}`, '-o', out, c]);
  libCache = {version, bytes: readFileSync(out)};
  return libCache.bytes;
}

/** The components of a small but real CUDA release: nvcc, cudart (with its link chain), cccl, cublas. */
export function realisticRelease(work: string, label = '12.4.1'): ReleaseSpec {
  const [maj, min, patch] = label.split('.');
  // Component versions differ per release (as NVIDIA's do), so archive paths never collide: 12.4.1 -> cudart 12.4.127.
  const cudart = `${maj}.${min}.${120 + 7 * Number(patch)}`;
  const longDir = 'include/thrust/system/detail/sequential/a_rather_long_directory_name_to_need_gnu_long_names';
  return {
    label,
    components: [
      {name: 'cuda_nvcc', version: `${maj}.${min}.${124 + 7 * Number(patch)}`, files: {
        'LICENSE': 'nvcc license\n',
        'bin/nvcc': {text: nvccScript(`${maj}.${min}`, `${maj}.${min}.${124 + 7 * Number(patch)}`), mode: 0o755},
        'bin/nvcc.profile': NVCC_PROFILE,
        'nvvm/libdevice/libdevice.10.bc': 'BC\xc0\xde',
        'include/crt/host_config.h': '#define __HOST_CONFIG_H__\n',
      }},
      {name: 'cuda_cudart', version: cudart, files: {
        'LICENSE': 'cudart license\n',
        [`lib/libcudart.so.${cudart}`]: {bytes: buildCudart(work, cudart)},
        [`lib/libcudart.so.${maj}`]: {symlink: `libcudart.so.${cudart}`},
        'lib/libcudart.so': {symlink: `libcudart.so.${maj}`},
        'lib/stubs/libcuda.so': 'stub\n',
        'include/cuda_runtime.h': 'int cudaRuntimeGetVersion(int *v);\n',
        'include/cuda_runtime_api.h': `#define CUDART_VERSION ${Number(maj) * 1000 + Number(min) * 10}\n`,
      }},
      {name: 'cuda_cccl', version: cudart, files: {
        'LICENSE': 'cccl license\n',
        'include/thrust/version.h': '#define THRUST_VERSION 200300\n',
        [`${longDir}/and_a_file_with_a_long_name_too.h`]: '/* long path */\n',
      }},
      {name: 'libcublas', version: `${maj}.${min}.5.${8 + Number(patch)}`, files: {
        'LICENSE': 'cublas license\n',
        [`lib/libcublas.so.${maj}.${min}.5.${8 + Number(patch)}`]: 'not a real cublas\n',
        [`lib/libcublas.so.${maj}`]: {symlink: `libcublas.so.${maj}.${min}.5.${8 + Number(patch)}`},
        'lib/libcublas.so': {symlink: `libcublas.so.${maj}`},
        'include/cublas_v2.h': '/* cublas */\n',
      }},
      {name: 'nvidia_driver', version: `550.54.${15 + Number(patch)}`, files: {'bin/nvidia-smi': {text: '#!/bin/sh\n', mode: 0o755}}},
    ],
  };
}

// ---- a tar writer for hostile archives ----

export interface TarEntry {
  name: string;
  /** ustar types, and the meta types x and g (pax), L and K (GNU long name and link). */
  type?: '0' | '1' | '2' | '3' | '4' | '5' | '6' | 'x' | 'g' | 'L' | 'K';
  linkname?: string;
  data?: string | Buffer;
  mode?: number;
}

function octal(n: number, len: number): string {
  return `${n.toString(8).padStart(len - 1, '0')}\0`;
}

/** A ustar archive (GNU long names are not needed for the short hostile paths). */
export function makeTar(entries: TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const data = typeof e.data === 'string' ? Buffer.from(e.data) : (e.data ?? Buffer.alloc(0));
    const h = Buffer.alloc(512);
    h.write(e.name, 0, 100, 'utf8');
    h.write(octal(e.mode ?? (e.type === '5' ? 0o755 : 0o644), 8), 100, 'latin1');
    h.write(octal(0, 8), 108, 'latin1');
    h.write(octal(0, 8), 116, 'latin1');
    h.write(octal(data.length, 12), 124, 'latin1');
    h.write(octal(1700000000, 12), 136, 'latin1');
    h.fill(0x20, 148, 156);
    h.write(e.type ?? '0', 156, 'latin1');
    if (e.linkname) h.write(e.linkname, 157, 100, 'utf8');
    h.write('ustar\0', 257, 'latin1');
    h.write('00', 263, 'latin1');
    let sum = 0;
    for (const b of h) sum += b;
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    blocks.push(h, data);
    if (data.length % 512) blocks.push(Buffer.alloc(512 - (data.length % 512)));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

// ---- the loopback server ----

export type Fault =
  | {kind: 'drop-after'; bytes: number; times?: number}
  /** Answers a Range request with 206 from byte `start` (not the one asked for), Content-Range saying so (or none). */
  | {kind: 'wrong-range'; start: number; noHeader?: boolean; times?: number}
  | {kind: 'status'; status: number; times?: number; headers?: Record<string, string>}
  | {kind: 'ignore-range'}
  | {kind: 'redirect'; to: string; times?: number}
  | {kind: 'throttle'; bytesPerSecond: number};

export interface MirrorServer {
  url: string;
  /** Requests seen: path, Range header and Authorization header. */
  log: Array<{path: string; range?: string; status: number; authorization?: string; at: number}>;
  faults: Map<string, Fault[]>;
  close(): Promise<void>;
}

/**
 * How the server frames bodies and treats the connection, as real mirrors differ:
 *   keep-alive  Content-Length, the connection stays open (Node's default)
 *   close       Content-Length and `Connection: close`: a FIN after every body (proxies, HTTP/1.0 servers)
 *   chunked     Transfer-Encoding: chunked, no Content-Length, keep-alive
 *   eof         neither Content-Length nor chunks: the body ends where the server closes the connection
 */
export type ServerStyle = 'keep-alive' | 'close' | 'chunked' | 'eof';

/** Serves `root` on 127.0.0.1 with Range support and per-path fault injection. */
export async function startMirrorServer(root: string, options: {style?: ServerStyle; auth?: string} = {}): Promise<MirrorServer> {
  const style = options.style ?? 'keep-alive';
  const log: MirrorServer['log'] = [];
  const faults = new Map<string, Fault[]>();
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, '');
    const range = req.headers.range;
    const authorization = req.headers.authorization;
    const respond = (status: number): void => {
      log.push({path, range, status, ...(authorization === undefined ? {} : {authorization}), at: Date.now()});
    };
    // `auth`: "USER:PASSWORD" that every request must carry as Basic authorization (a mirror behind Artifactory).
    if (options.auth !== undefined && authorization !== `Basic ${Buffer.from(options.auth).toString('base64')}`) {
      res.writeHead(401, {'www-authenticate': 'Basic realm="mirror"', 'content-type': 'text/plain'}).end('authentication required\n');
      return respond(401);
    }
    const rel = normalize(path === '' ? 'index.html' : path);
    if (rel.startsWith('..')) {
      res.writeHead(403).end();
      return respond(403);
    }
    const list = faults.get(path) ?? [];
    // Status and drop faults apply in list order, one per request: [drop, 503 x3] drops the
    // first response and answers the next three with 503.
    const take = (): Fault | undefined => {
      const i = list.findIndex((f) => f.kind === 'status' || f.kind === 'drop-after' || (f.kind === 'wrong-range' && range !== undefined));
      if (i === -1) return undefined;
      const f = list[i] as {times?: number};
      if ((f.times ?? 1) <= 1) list.splice(i, 1);
      else f.times!--;
      return f as Fault;
    };
    const redirect = list.find((f) => f.kind === 'redirect') as {to: string; times?: number} | undefined;
    if (redirect) {
      if (redirect.times !== undefined && --redirect.times <= 0) list.splice(list.indexOf(redirect as Fault), 1);
      res.writeHead(302, {location: redirect.to}).end();
      return respond(302);
    }
    const fault = take();
    if (fault?.kind === 'status') {
      res.writeHead(fault.status, {'content-type': 'text/plain', ...fault.headers}).end(`injected ${fault.status}\n`);
      return respond(fault.status);
    }
    const file = join(root, rel);
    let size: number;
    try {
      const st = statSync(file);
      if (!st.isFile()) throw new Error('not a file');
      size = st.size;
    } catch {
      res.writeHead(404, {'content-type': 'text/plain'}).end('not found\n');
      return respond(404);
    }
    let start = 0;
    let status = 200;
    const headers: Record<string, string | number> = {'accept-ranges': 'bytes', 'content-type': 'application/octet-stream'};
    const m = range ? /^bytes=(\d+)-$/.exec(range) : null;
    if (fault?.kind === 'wrong-range') {
      start = Math.min(fault.start, size - 1);
      status = 206;
      if (!fault.noHeader) headers['content-range'] = `bytes ${start}-${size - 1}/${size}`;
    } else if (m && !list.some((f) => f.kind === 'ignore-range')) {
      start = Number(m[1]);
      if (start >= size) {
        res.writeHead(416, {'content-range': `bytes */${size}`}).end();
        return respond(416);
      }
      status = 206;
      headers['content-range'] = `bytes ${start}-${size - 1}/${size}`;
    }
    if (style === 'keep-alive' || style === 'close') headers['content-length'] = size - start;
    if (style === 'close' || style === 'eof') headers.connection = 'close';
    // Without a length, Node would chunk the body; 'eof' wants it raw, ended by closing the connection.
    if (style === 'eof') res.useChunkedEncodingByDefault = false;
    res.writeHead(status, headers);
    respond(status);
    const drop = fault?.kind === 'drop-after' ? fault : undefined;
    const throttle = list.find((f) => f.kind === 'throttle') as {bytesPerSecond: number} | undefined;
    const end = drop ? Math.min(size - 1, start + drop.bytes - 1) : size - 1;
    const stream = createReadStream(file, {start, end, highWaterMark: throttle ? Math.max(16, Math.floor(throttle.bytesPerSecond / 20)) : 1 << 16});
    if (throttle) {
      stream.on('data', () => {
        stream.pause();
        setTimeout(() => stream.resume(), 50);
      });
    }
    stream.on('data', (chunk) => res.write(chunk));
    res.on('close', () => stream.destroy()); // a client that gave up (a throttled body) stops the reading
    stream.on('end', () => {
      // A dropped connection: the body stops short of Content-Length and the socket is destroyed.
      if (drop) res.socket?.destroy();
      else res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const {port} = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    log,
    faults,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * `python3 -m http.server` on 127.0.0.1 serving `root`: how many people share an air-gapped
 * mirror. HTTP/1.0, a FIN after every body, no Range support. `log` holds its request lines.
 */
export async function startPythonMirror(root: string): Promise<{url: string; log: string[]; close(): Promise<void>}> {
  const {spawn} = await import('node:child_process');
  const child = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', root], {stdio: ['ignore', 'pipe', 'pipe']});
  const log: string[] = [];
  let err = '';
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    const lines = err.split('\n');
    err = lines.pop()!;
    for (const line of lines) if (/"GET /.test(line)) log.push(line.replace(/^.*?"GET /, 'GET '));
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /port (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`python3 -m http.server exited with ${code}: ${err}`)));
  });
  return {
    url: `http://127.0.0.1:${port}/`,
    log,
    close: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    }),
  };
}

export const haveOpenssl = spawnSync('openssl', ['version'], {stdio: 'ignore'}).status === 0;

/**
 * An https mirror of `root` on loopback, with a self-signed certificate made by openssl in
 * `workDir`: clients trust it through NODE_EXTRA_CA_CERTS=`cert`, as a network with its own CA.
 */
export async function startHttpsMirror(root: string, workDir: string): Promise<{url: string; cert: string; close(): Promise<void>}> {
  const {createServer: createHttpsServer} = await import('node:https');
  const key = join(workDir, 'key.pem');
  const cert = join(workDir, 'cert.pem');
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], {encoding: 'utf8'});
  if (made.status !== 0) throw new Error(`openssl could not make a certificate: ${made.stderr}`);
  const server = createHttpsServer({key: readFileSync(key), cert: readFileSync(cert)}, (req, res) => {
    const file = join(root, decodeURIComponent(new URL(req.url ?? '/', 'https://x').pathname).replace(/^\/+/, '') || 'index.html');
    let size: number;
    try {
      if (!file.startsWith(root)) throw new Error('outside');
      size = statSync(file).size;
    } catch {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {'content-length': size});
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    cert,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
