/**
 * The rc line (README): `. <store>/shell/init.SHELL 2>/dev/null || eval "$(cudaenv init SHELL)"`.
 * `cudaenv init` writes the start file; a new shell that sources it starts no process at all
 * (strace), and a start file that names an installation that has gone (cudaenv moved or
 * removed, then installed elsewhere) falls back to `cudaenv init`, which writes it again.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, closeSync, mkdirSync, openSync, readFileSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {rcLine, startFileName} from '../../../src/core/shell/shell.js';
import {CLI, REPO_ROOT, cliEnv, runCli} from '../../helpers/cli.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {have, makeStore, quietFishHome, shellArgs, type ShellName} from './shell-harness.js';

const canTrace = have('strace') && spawnSync('strace', ['-f', '-e', 'trace=process', '-o', '/dev/null', 'true']).status === 0;

function writeRcFile(shell: ShellName, home: string, line: string): Record<string, string> {
  if (shell === 'fish') {
    mkdirSync(join(home, '.config', 'fish'), {recursive: true});
    quietFishHome(home);
    writeFileSync(join(home, '.config', 'fish', 'config.fish'), `function fish_greeting; end\n${line}\n`);
    return {XDG_CONFIG_HOME: join(home, '.config')};
  }
  mkdirSync(home, {recursive: true});
  writeFileSync(join(home, shell === 'bash' ? '.bashrc' : '.zshrc'), `PS1='$ '\n${line}\n`);
  return shell === 'zsh' ? {ZDOTDIR: home} : {};
}

function runShell(shell: ShellName, home: string, env: NodeJS.ProcessEnv, input: string, prefix: string[] = []): {stdout: string; stderr: string; status: number} {
  const file = join(home, `.in-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, `${input}\nexit\n`);
  const fd = openSync(file, 'r');
  try {
    const [cmd, ...args] = [...prefix, shell, ...shellArgs(shell, home)];
    const r = spawnSync(cmd, args, {cwd: home, env, stdio: [fd, 'pipe', 'pipe'], encoding: 'utf8', timeout: 60000});
    return {stdout: r.stdout, stderr: r.stderr, status: r.status ?? -1};
  } finally {
    closeSync(fd);
  }
}

for (const shell of ['bash', 'zsh', 'fish'] as ShellName[]) {
  describeIf(have(shell), `${shell} is not installed`)(`${shell}: the start file`, () => {
    let tmp: {dir: string; cleanup: () => void};
    let store: string;
    let home: string;
    let env: NodeJS.ProcessEnv;
    let startFile: string;

    beforeAll(async () => {
      tmp = makeTempDir(`cudaenv-start-${shell}-`);
      store = join(tmp.dir, 'store');
      await makeStore(store, ['12.4.1']);
      home = join(tmp.dir, 'home');
      // `cudaenv` on PATH is a wrapper of this checkout's CLI (as npm's link would be).
      const bin = join(tmp.dir, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'cudaenv'), `#!/bin/sh\nexec '${process.execPath}' '${CLI}' "$@"\n`);
      chmodSync(join(bin, 'cudaenv'), 0o755);
      env = cliEnv(store, {HOME: home, PATH: `${bin}:/usr/bin:/bin`, TERM: 'dumb', ...writeRcFile(shell, home, rcLine(shell).replace('~/.cudaenv', store))});
      delete env.LD_LIBRARY_PATH;
      startFile = join(store, startFileName(shell));
    });
    afterAll(() => tmp.cleanup());

    test('the first shell falls back to `cudaenv init`, which writes the start file; it names this installation', () => {
      const r = runShell(shell, home, env, shell === 'fish' ? 'functions -q cudaenv; and echo HAVE' : 'type cudaenv >/dev/null && echo HAVE');
      expect(r.stdout).toContain('HAVE');
      const text = readFileSync(startFile, 'utf8');
      expect(text).toContain(join(REPO_ROOT, 'shims', 'shell', shell === 'fish' ? 'cudaenv.fish' : 'posix.sh'));
      expect(text).toContain(join(REPO_ROOT, 'bin', 'cudaenv')); // the launcher, as init names it
    });

    testIf(canTrace, 'strace is missing or cannot ptrace here')('a new shell that sources the start file starts no process', () => {
      runCli(['init', shell], {env});
      const log = join(tmp.dir, `strace-${shell}.log`);
      const r = runShell(shell, home, env, shell === 'fish' ? 'functions -q _cudaenv_hook; and echo HOOKED' : 'type _cudaenv_hook >/dev/null && echo HOOKED', ['strace', '-f', '-e', 'trace=execve', '-o', log]);
      expect(r.stdout).toContain('HOOKED');
      const execs = readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('execve(') && !l.includes('ENOENT'));
      // The shell itself, nothing else (no node, no cudaenv).
      expect(execs).toHaveLength(1);
      expect(execs[0]).toContain(shell);
    });

    test('a start file naming an installation that has gone falls back to `cudaenv init`, which writes it again', () => {
      runCli(['init', shell], {env});
      const good = readFileSync(startFile, 'utf8');
      writeFileSync(startFile, good.replaceAll(REPO_ROOT, '/nonexistent/old-cudaenv'));
      const r = runShell(shell, home, env, shell === 'fish' ? 'functions -q _cudaenv_hook; and echo HOOKED' : 'type _cudaenv_hook >/dev/null && echo HOOKED');
      expect(r.stdout).toContain('HOOKED');
      expect(readFileSync(startFile, 'utf8')).toBe(good);
    });
  });
}

describe('init', () => {
  test('under sudo the start file is not written into the user\'s store (it would belong to root)', () => {
    const tmp = makeTempDir('cudaenv-start-sudo-');
    try {
      const store = join(tmp.dir, 'store');
      mkdirSync(store);
      const r = runCli(['init', 'bash'], {env: cliEnv(store, {SUDO_USER: 'someone'})});
      expect(r.status).toBe(0);
      const written = spawnSync('sh', ['-c', `test -e '${join(store, startFileName('bash'))}'`]).status === 0;
      expect(written).toBe(process.getuid?.() !== 0);
      expect(dirname(startFileName('bash'))).toBe('shell');
    } finally {
      tmp.cleanup();
    }
  });
});
