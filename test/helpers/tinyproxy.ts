import {spawn, spawnSync, type ChildProcess} from 'node:child_process';
import {readFileSync, writeFileSync} from 'node:fs';
import {createConnection, createServer, type AddressInfo} from 'node:net';
import {join} from 'node:path';

/** A real HTTP proxy (tinyproxy, as in many offices and CI networks) on loopback. */
export interface Proxy {
  url: string;
  port: number;
  /** tinyproxy's log so far: its CONNECT and Request lines show what went through it. */
  log(): string;
  close(): Promise<void>;
}

export const haveTinyproxy = spawnSync('tinyproxy', ['-v'], {stdio: 'ignore'}).status === 0;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const {port} = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function accepting(port: number, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`tinyproxy exited with ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({host: '127.0.0.1', port}, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`tinyproxy does not accept connections on ${port}`);
}

/** Starts tinyproxy in the foreground with its own configuration in `dir`. */
export async function startTinyproxy(dir: string, options: {basicAuth?: [string, string]; connectPorts?: number[]} = {}): Promise<Proxy> {
  const port = await freePort();
  const logFile = join(dir, `tinyproxy-${port}.log`);
  const conf = join(dir, `tinyproxy-${port}.conf`);
  writeFileSync(logFile, '');
  writeFileSync(conf, [
    `Port ${port}`, 'Listen 127.0.0.1', 'Timeout 60', `LogFile "${logFile}"`, 'LogLevel Connect', 'MaxClients 50',
    'Allow 127.0.0.1', 'DisableViaHeader Yes',
    // root runs it as nobody, who must be able to write the log
    ...(process.getuid?.() === 0 ? ['User root', 'Group root'] : []),
    ...(options.basicAuth ? [`BasicAuth ${options.basicAuth[0]} ${options.basicAuth[1]}`] : []),
    ...(options.connectPorts ?? []).map((p) => `ConnectPort ${p}`),
  ].join('\n') + '\n');
  const child = spawn('tinyproxy', ['-d', '-c', conf], {stdio: ['ignore', 'ignore', 'ignore']});
  await accepting(port, child);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    log: () => readFileSync(logFile, 'utf8'),
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** A loopback port with nothing listening on it (a proxy that is down). */
export const deadPort = freePort;
