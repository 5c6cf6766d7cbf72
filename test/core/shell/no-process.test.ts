/**
 * At a prompt where neither the directory nor the version file changed, the hook starts no
 * process: a real interactive shell is traced with `strace -f -e trace=process` while it
 * shows several prompts. A control step in the same setup runs /bin/true and must be seen.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawn, spawnSync, type ChildProcess} from 'node:child_process';
import {createWriteStream, mkdirSync, readFileSync, writeFileSync, type WriteStream} from 'node:fs';
import {join} from 'node:path';
import {cliEnv} from '../../helpers/cli.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {have, makeStore, shellArgs, writeRc, type ShellName} from './shell-harness.js';
import {describeIf} from '../../helpers/skip.js';
import {NEEDS} from '../../helpers/capabilities.js';

const canTrace = have('strace') && spawnSync('strace', ['-f', '-e', 'trace=process', '-o', '/dev/null', 'true']).status === 0;

function waitFor(child: ChildProcess, text: string, buffer: {out: string}, timeoutMs = 30000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out waiting for ${text}; output so far: ${buffer.out}`)), timeoutMs);
    const check = () => {
      if (buffer.out.includes(text)) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        resolve();
      }
    };
    child.stdout!.on('data', check);
    check();
  });
}

async function traced(pid: number, log: string, act: () => Promise<void>): Promise<string[]> {
  const strace = spawn('strace', ['-f', '-e', 'trace=process', '-p', String(pid), '-o', log], {stdio: ['ignore', 'ignore', 'pipe']});
  let err = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`strace did not attach: ${err}`)), 20000);
    strace.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      if (/attached/.test(err)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  await act();
  const done = new Promise((resolve) => strace.on('exit', resolve));
  strace.kill('SIGINT');
  await done;
  // Threads are not processes: fish's line editor runs highlighting on its own threads (CLONE_THREAD).
  return readFileSync(log, 'utf8').split('\n').filter((l) => /\b(clone3?|fork|vfork|execve)\(/.test(l) && !l.includes('CLONE_THREAD'));
}

/** The one child of a process (script's shell). */
function childOf(pid: number): number {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  if (children.length !== 1 || !children[0]) throw new Error(`expected one child of ${pid}, found ${children.join(' ')}`);
  return children[0];
}

for (const shell of ['bash', 'zsh', 'fish'] as ShellName[]) {
  const d = describeIf(canTrace && have(shell), canTrace ? `needs ${shell} (apt-get install ${shell})` : NEEDS.ptrace);
  d(`${shell}: the prompt hook`, () => {
    let tmp: {dir: string; cleanup: () => void};
    let child: ChildProcess;
    let input: WriteStream;
    const buffer = {out: ''};
    let shellPid = 0;

    beforeAll(async () => {
      tmp = makeTempDir('cudaenv-strace-');
      const store = join(tmp.dir, 'store');
      await makeStore(store, ['12.4.1']);
      const home = join(tmp.dir, 'home');
      mkdirSync(join(tmp.dir, 'proj'), {recursive: true});
      mkdirSync(home, {recursive: true});
      writeFileSync(join(tmp.dir, 'proj', '.cuda-version'), '12.4\n');
      const extra = writeRc(shell, home);
      const fifo = join(tmp.dir, 'input');
      spawnSync('mkfifo', [fifo]);
      const env = cliEnv(store, {HOME: home, PATH: '/usr/bin:/bin', TERM: 'dumb', ...extra});
      delete env.PROMPT_COMMAND;
      // fish reads all of a non-terminal stdin before running it: give it a terminal (script).
      // The terminal echoes input, so markers are written split ('REA''DY1') and only output matches.
      const command = shell === 'fish'
        ? ['-c', 'exec script -qfec "exec fish -i" /dev/null < "$CUDAENV_TEST_FIFO"']
        : ['-c', 'exec "$0" "$@" < "$CUDAENV_TEST_FIFO"', shell, ...shellArgs(shell, home)];
      child = spawn('sh', command, {
        cwd: tmp.dir, env: {...env, CUDAENV_TEST_FIFO: fifo}, stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout!.on('data', (d: Buffer) => { buffer.out += d.toString(); });
      child.stderr!.on('data', () => {});
      input = createWriteStream(fifo);
      input.write(`cd '${tmp.dir}/proj'\necho 'REA''DY1'\n`);
      await waitFor(child, 'READY1', buffer);
      shellPid = shell === 'fish' ? childOf(child.pid!) : child.pid!;
    });
    afterAll(async () => {
      input.end('exit\n');
      await new Promise((resolve) => child.on('exit', resolve));
      tmp.cleanup();
    });

    test('five unchanged prompts start no process', async () => {
      const spawned = await traced(shellPid, join(tmp.dir, 'idle.log'), async () => {
        input.write("\n\n:\n\necho 'REA''DY2'\n");
        await waitFor(child, 'READY2', buffer);
      });
      expect(spawned).toEqual([]);
    });

    test('control: the trace sees a process the shell does start', async () => {
      const spawned = await traced(shellPid, join(tmp.dir, 'control.log'), async () => {
        input.write("/bin/true\necho 'REA''DY3'\n");
        await waitFor(child, 'READY3', buffer);
      });
      expect(spawned.length).toBeGreaterThan(0);
    });
  });
}
