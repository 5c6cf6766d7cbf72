import {spawn, spawnSync, type ChildProcess} from 'node:child_process';
import {writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {createInterface} from 'node:readline';

export interface Served {
  url: string;
  close: () => void;
}

export interface ServeOptions {
  /** Serve over TLS with this certificate and key (PEM files; makeCertificate). */
  tls?: {cert: string; key: string};
  /** A JSON file read at each request: {"/path": "URL"} answers 302 with Location URL. */
  redirects?: string;
}

const SERVER = `
import functools, http.server, json, ssl, sys
directory, cert, key, redirects = sys.argv[1:5]
class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if redirects:
            with open(redirects) as f:
                to = json.load(f).get(self.path.split('?')[0])
            if to:
                self.send_response(302)
                self.send_header('Location', to)
                self.send_header('Content-Length', '0')
                self.end_headers()
                return
        return super().do_GET()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(Handler, directory=directory))
if cert:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
print('port', server.server_address[1], flush=True)
server.serve_forever()
`;

/**
 * A static file server on 127.0.0.1 in a process of its own (python3's http.server): the test
 * runs install.sh and the executable with spawnSync, which would block a server in Jest's process.
 * Over TLS with options.tls; answering redirects with options.redirects.
 */
export async function serveDir(dir: string, options: ServeOptions = {}): Promise<Served> {
  const args = ['-u', '-c', SERVER, dir, options.tls?.cert ?? '', options.tls?.key ?? '', options.redirects ?? ''];
  const child: ChildProcess = spawn('python3', args, {stdio: ['ignore', 'pipe', 'inherit']});
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the python3 file server did not start within 10 s')), 10_000);
    createInterface({input: child.stdout!}).on('line', (line) => {
      const m = /^port (\d+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.on('exit', (code) => reject(new Error(`the python3 file server exited with ${code}`)));
  });
  return {url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`, close: () => child.kill()};
}

/** A self-signed certificate for 127.0.0.1 (openssl), valid one day: DIR/cert.pem and DIR/key.pem. */
export function makeCertificate(dir: string): {cert: string; key: string} {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`openssl req failed: ${r.stderr}`);
  return {cert, key};
}

/** Points the redirects file of a server (ServeOptions.redirects) at TARGETS. */
export function setRedirects(file: string, targets: Record<string, string>): void {
  writeFileSync(file, JSON.stringify(targets));
}
