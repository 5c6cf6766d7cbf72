import {afterAll, describe, expect, test} from '@jest/globals';
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {closest} from '../../src/core/text/suggest.js';
import {spawnSync} from 'node:child_process';
import {CLI, cliEnv, REPO_ROOT, runCli} from '../helpers/cli.js';
import {testIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';

describe('finding one\'s way', () => {
  const {dir, cleanup} = makeTempDir();
  const env = cliEnv(join(dir, 'store'), {PATH: '/usr/bin:/bin'});
  afterAll(cleanup);

  test('help, help COMMAND and -h show the help --help shows, exit 0', () => {
    const full = runCli(['--help'], {env});
    for (const args of [['help'], ['-h']]) {
      const r = runCli(args, {env});
      expect(r.status).toBe(0);
      expect(r.stdout).toBe(full.stdout);
    }
    const use = runCli(['help', 'use'], {env});
    expect(use.status).toBe(0);
    expect(use.stdout).toBe(runCli(['use', '--help'], {env}).stdout);
    expect(runCli(['use', '-h'], {env}).stdout).toBe(use.stdout);
  });

  test('the commands without --json are exactly those the README names, each refusing it with exit 2 (issue 44, item 10)', () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    const claim = /Every command that reports something takes `--json`; (\w+) do not, [^:]+: (.*?)\. /.exec(readme);
    expect(claim).not.toBeNull();
    const named = [...claim![2]!.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]!).sort();
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, {hidden?: boolean; flags: Record<string, unknown>}>};
    const without = Object.entries(manifest.commands).filter(([, c]) => !c.hidden && !c.flags.json).map(([id]) => id).sort();
    expect(named).toEqual(without);
    expect(claim![1]).toBe(['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven'][without.length]);
    for (const id of without.filter((c) => c !== 'exec' && c !== 'help')) {
      const r = runCli([id, ...(id === 'init' || id === 'completion' ? ['bash'] : []), '--json'], {env});
      expect({id, status: r.status}).toEqual({id, status: 2});
    }
  });

  test('a typo gets the command it most likely meant, with its arguments', () => {
    let r = runCli(['isntall', '12.4'], {env});
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('cudaenv: there is no command "isntall"\nDid you mean `cudaenv install 12.4`? See `cudaenv --help` for the list of commands.\n');
    r = runCli(['help', 'docter'], {env});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('Did you mean `cudaenv help doctor`?');
    expect(closest('xyz', ['install', 'use'])).toBeUndefined();
    expect(closest('uze', ['use', 'ls'])).toBe('use');
    expect(closest('us', ['use', 'ls'])).toBeUndefined(); // as close to ls: no guess
  });

  test('exec takes the command from its first word that is not an exec flag (-- optional)', () => {
    const tk = makeFakeToolkit(join(dir, 'tk'), {version: '12.4.1'});
    expect(runCli(['add', tk], {env}).status).toBe(0);
    let r = runCli(['exec', '--cuda', '12.4', 'nvcc', '--version'], {env});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('Cuda compilation tools, release 12.4, V12.4.131');
    r = runCli(['exec', '--cuda=12.4', 'sh', '-c', 'echo "$CUDA_HOME $1"', 'sh', '-h'], {env});
    expect(r.stdout.trim()).toBe(`${join(dir, 'store', 'versions', '12.4.1')} -h`);
    // Repeated words keep their places (oclif's argv reordered them).
    r = runCli(['exec', '--cuda', '12.4', '--', 'sh', '-c', 'echo "$1 $2"', 'sh', 'sh', 'x'], {env});
    expect(r.stdout).toBe('sh x\n');
    r = runCli(['exec', '--bogus', 'x'], {env});
    expect(r.status).toBe(2);
  });

  test('config names the values a setting accepts', () => {
    const r = runCli(['config', 'ldLibraryPath', 'banana'], {env});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('invalid value "banana" for the setting ldLibraryPath');
    expect(r.stderr).toContain('Valid values: prepend');
  });

  test('which under system prints what PATH finds, cudaenv\'s shims left out', () => {
    const sysBin = join(dir, 'sysbin');
    mkdirSync(sysBin, {recursive: true});
    writeFileSync(join(sysBin, 'nvcc'), '#!/bin/sh\n', {mode: 0o755});
    const shims = join(dir, 'store', 'shims');
    const e = {...env, PATH: `${shims}:${sysBin}:/usr/bin:/bin`};
    let r = runCli(['which', 'nvcc'], {env: e});
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${join(sysBin, 'nvcc')}\n`);
    r = runCli(['which', 'nvcc', '--cuda', 'system', '--json'], {env: e});
    expect(JSON.parse(r.stdout)).toEqual({command: 'nvcc', path: join(sysBin, 'nvcc'), version: 'system'});
    r = runCli(['which', 'nvcc'], {env});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('the system has no nvcc on PATH');
  });
});

describe('colour', () => {
  const {dir, cleanup} = makeTempDir();
  afterAll(cleanup);
  const HAVE_SCRIPT = spawnSync('script', ['--version'], {stdio: 'ignore'}).status === 0;
  /** Runs the CLI under a pseudo-terminal (util-linux script), as a person at a terminal would. */
  const atTty = (args: string, extra: string): string => {
    const cmd = `${extra} ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} ${args}`;
    return spawnSync('script', ['-qec', cmd, '/dev/null'], {env: cliEnv(join(dir, 'store'), {PATH: '/usr/bin:/bin', TERM: 'xterm'}), encoding: 'utf8'}).stdout;
  };
  testIf(HAVE_SCRIPT, 'needs script(1) from util-linux for a pseudo-terminal')('errors red, the active version green at a terminal (ls and current); none with NO_COLOR or through a pipe', () => {
    const tk = makeFakeToolkit(join(dir, 'tk'), {version: '12.4.1'});
    expect(runCli(['add', tk], {env: cliEnv(join(dir, 'store'))}).status).toBe(0);
    expect(atTty(`add ${join(dir, 'missing')}`, '')).toContain(`cudaenv: \u001B[31m${join(dir, 'missing')} does not exist\u001B[39m`);
    expect(atTty('ls', 'CUDAENV_VERSION=12.4.1')).toContain('active: \u001B[32m12.4.1\u001B[39m');
    // `current` answers without oclif (the start-up fast path): the same colours
    expect(atTty('current', 'CUDAENV_VERSION=12.4.1')).toContain('\u001B[32m12.4.1\u001B[39m (set by CUDAENV_VERSION');
    expect(atTty('current', 'CUDAENV_VERSION=11.0')).toContain('cudaenv: \u001B[31m11.0 (set by CUDAENV_VERSION');
    expect(atTty('current', 'CUDAENV_VERSION=12.4.1 NO_COLOR=1')).not.toContain('\u001B[');
    expect(atTty(`add ${join(dir, 'missing')}`, 'NO_COLOR=1')).not.toContain('\u001B[');
    const piped = runCli(['ls'], {env: cliEnv(join(dir, 'store'), {CUDAENV_VERSION: '12.4.1', TERM: 'xterm'})});
    expect(piped.stdout).not.toContain('\u001B[');
  });
});
