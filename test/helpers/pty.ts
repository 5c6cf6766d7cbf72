import {spawn, type ChildProcess} from 'node:child_process';

/**
 * A command on a real pseudo-terminal, driven as a person drives one: python3's pty module opens
 * it (with a size, as a terminal window has one), the command runs as the leader of a session
 * whose controlling terminal it is, and the test types into it (Ctrl-C is the byte 0x03, which
 * the terminal turns into SIGINT for the foreground process group), sends signals, or closes the
 * terminal (the kernel's hangup: SIGHUP to the session leader). `output` is what the terminal
 * showed, escape sequences included.
 */
const DRIVER = String.raw`
import fcntl, json, os, select, signal, struct, subprocess, sys, termios
cols, rows = int(sys.argv[1]), int(sys.argv[2])
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
def session():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
p = subprocess.Popen(sys.argv[3:], stdin=slave, stdout=slave, stderr=slave, preexec_fn=session, close_fds=True)
os.close(slave)
ctl = sys.stdin.fileno()
watch_ctl = True
open_master = True
out = sys.stdout.buffer
def read_master():
    global open_master
    try:
        data = os.read(master, 65536)
    except OSError:
        data = b''
    if data:
        out.write(data)
        out.flush()
    else:
        os.close(master)
        open_master = False
while True:
    fds = ([ctl] if watch_ctl else []) + ([master] if open_master else [])
    ready = select.select(fds, [], [], 0.05)[0] if fds else []
    if open_master and master in ready:
        read_master()
    if watch_ctl and ctl in ready:
        line = sys.stdin.readline().strip()
        if line == '':
            watch_ctl = False
        elif line == 'ctrl-c' and open_master:
            os.write(master, b'\x03')
        elif line == 'close' and open_master:
            os.close(master)
            open_master = False
        elif line.startswith('SIG'):
            os.kill(p.pid, getattr(signal, line))
    if p.poll() is not None:
        while open_master and select.select([master], [], [], 0.3)[0]:
            read_master()
        break
code = p.returncode
sys.stderr.write(json.dumps({'code': code if code >= 0 else None, 'signal': -code if code < 0 else None}) + '\n')
`;

export interface PtyRun {
  child: ChildProcess;
  /** What the terminal showed so far. */
  output(): string;
  /** Types Ctrl-C. */
  ctrlC(): void;
  /** Sends a signal to the command (as `kill` from another terminal would). */
  kill(signal: 'SIGINT' | 'SIGTERM' | 'SIGHUP'): void;
  /** Closes the terminal (the window is closed, the ssh connection drops). */
  close(): void;
  done: Promise<{code: number | null; signal: number | null; output: string}>;
}

export function runInPty(argv: string[], env: NodeJS.ProcessEnv, size: {cols: number; rows: number} = {cols: 100, rows: 30}): PtyRun {
  const child = spawn('python3', ['-c', DRIVER, String(size.cols), String(size.rows), ...argv], {env, stdio: ['pipe', 'pipe', 'pipe']});
  let output = '';
  let status = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (status += d.toString('utf8')));
  const send = (line: string): void => {
    child.stdin!.write(`${line}\n`);
  };
  const done = new Promise<{code: number | null; signal: number | null; output: string}>((resolve, reject) => {
    child.on('close', () => {
      const last = status.trim().split('\n').at(-1) ?? '';
      try {
        resolve({...(JSON.parse(last) as {code: number | null; signal: number | null}), output});
      } catch {
        reject(new Error(`the pty driver failed: ${status}`));
      }
      child.stdin!.destroy();
    });
  });
  return {child, output: () => output, ctrlC: () => send('ctrl-c'), kill: (s) => send(s), close: () => send('close'), done};
}
