import {spawn, type ChildProcess} from 'node:child_process';
import {createInterface} from 'node:readline';

/**
 * A static file server on 127.0.0.1 in a process of its own (python3 -m http.server): the test
 * runs install.sh and the executable with spawnSync, which would block a server in Jest's process.
 */
export async function serveDir(dir: string): Promise<{url: string; close: () => void}> {
  const child: ChildProcess = spawn('python3', ['-u', '-m', 'http.server', '--bind', '127.0.0.1', '--directory', dir, '0'], {stdio: ['ignore', 'pipe', 'ignore']});
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('python3 -m http.server did not start within 10 s')), 10_000);
    createInterface({input: child.stdout!}).on('line', (line) => {
      const m = /port (\d+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.on('exit', (code) => reject(new Error(`python3 -m http.server exited with ${code}`)));
  });
  return {url: `http://127.0.0.1:${port}`, close: () => child.kill()};
}
