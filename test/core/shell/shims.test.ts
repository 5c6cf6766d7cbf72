/**
 * The shims against `cudaenv current`: table-driven, the same cases for both (environment
 * variable, nested .cuda-version files, aliases, global default, missing versions, invalid
 * files), and they must agree on the version or on failing.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {pathsFor} from '../../../src/core/store/paths.js';
import {rehash} from '../../../src/core/shell/rehash.js';
import {SHIM_MARKER} from '../../../src/core/shell/shims.js';
import {cliEnv, runCli} from '../../helpers/cli.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {makeStore} from './shell-harness.js';
import {testIf} from '../../helpers/skip.js';
import {canDropToNobody, NOBODY, runCliAsNobody} from '../../helpers/nobody.js';

const WHOAMI = '#!/bin/sh\ncd "$(dirname "$0")/.." && pwd -P\n';

describe('shims', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  let sysbin: string;

  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-shims-');
    store = join(tmp.dir, 'store with space');
    // 12.4.1-local: a second 12.4.1 toolkit under a suffixed label (cudaenv add DIR --as 12.4.1-local).
    const paths = await makeStore(store, ['11.8.0', '12.4.1', '12.2.0', '12.4.1-local']);
    for (const label of ['11.8.0', '12.4.1', '12.2.0', '12.4.1-local']) {
      writeFileSync(join(paths.versions, label, 'bin', 'whoami-cuda'), WHOAMI);
      chmodSync(join(paths.versions, label, 'bin', 'whoami-cuda'), 0o755);
    }
    rehash(paths);
    sysbin = join(tmp.dir, 'system-bin');
    mkdirSync(sysbin);
    writeFileSync(join(sysbin, 'whoami-cuda'), '#!/bin/sh\necho system\n');
    chmodSync(join(sysbin, 'whoami-cuda'), 0o755);
    mkdirSync(join(paths.aliases), {recursive: true});
    writeFileSync(join(paths.aliases, 'stable'), '11.8\n');
    writeFileSync(join(paths.aliases, 'chain'), 'stable\n');
    writeFileSync(join(paths.aliases, 'loop1'), 'loop2\n');
    writeFileSync(join(paths.aliases, 'loop2'), 'loop1\n');
    writeFileSync(join(paths.aliases, 'gone'), '10.0\n');
    writeFileSync(join(paths.aliases, 'cuda-12.2'), '12.2\n');
  });
  afterAll(() => tmp.cleanup());

  test('rehash writes one shim per program of any version, marked and executable', () => {
    const shims = pathsFor(store).shims;
    for (const name of ['nvcc', 'ptxas', 'whoami-cuda']) {
      const file = join(shims, name);
      expect(readFileSync(file, 'utf8')).toContain(SHIM_MARKER);
      expect(statSync(file).mode & 0o111).not.toBe(0);
    }
    // A program no version has any more loses its shim; the user's own files stay.
    writeFileSync(join(shims, 'users-own'), '#!/bin/sh\n');
    const only = join(pathsFor(store).versions, '12.2.0', 'bin', 'only-here');
    writeFileSync(only, '#!/bin/sh\n');
    chmodSync(only, 0o755);
    expect(rehash(pathsFor(store)).written).toEqual(['only-here']);
    rmSync(only);
    const r = rehash(pathsFor(store));
    expect(r.removed).toEqual(['only-here']);
    expect(existsSync(join(shims, 'only-here'))).toBe(false);
    expect(existsSync(join(shims, 'users-own'))).toBe(true);
  });

  /** links: symbolic links (path -> target); fifos: named pipes; dirs: directories, made after the files. */
  type Case = {name: string; files?: Record<string, string | Buffer>; links?: Record<string, string>; fifos?: string[]; dirs?: string[]; global?: string; env?: Record<string, string>; cwd?: string};
  const cases: Case[] = [
    {name: 'nothing selected: system'},
    {name: 'global default', global: '12'},
    {name: 'global default latest', global: 'latest'},
    {name: 'CUDAENV_VERSION wins over a file', env: {CUDAENV_VERSION: '12.2'}, files: {'p/.cuda-version': '11.8\n'}, cwd: 'p'},
    {name: 'CUDAENV_VERSION=system', env: {CUDAENV_VERSION: 'system'}, global: '12'},
    {name: 'CUDAENV_VERSION invalid', env: {CUDAENV_VERSION: '12.x'}},
    {name: 'empty CUDAENV_VERSION is ignored', env: {CUDAENV_VERSION: ''}, global: '11'},
    {name: 'nearest file in a parent', files: {'p/.cuda-version': '# comment\n\n  11.8  \r\ncudnn=9\n'}, cwd: 'p/a/b'},
    {name: 'nested file wins', files: {'p/.cuda-version': '11.8\n', 'p/q/.cuda-version': '12.2\n'}, cwd: 'p/q/r'},
    {name: 'file beats global', files: {'p/.cuda-version': '12.4.1\n'}, global: '11', cwd: 'p'},
    {name: 'a suffixed label in a file', files: {'p/.cuda-version': '12.4.1-local\n'}, global: '12.4', cwd: 'p'},
    {name: 'a suffixed label in CUDAENV_VERSION', env: {CUDAENV_VERSION: '12.4.1-local'}},
    {name: '12.4 selects the release, never the suffixed label', env: {CUDAENV_VERSION: '12.4'}},
    {name: 'a suffixed label with a capital', files: {'p/.cuda-version': '12.4.1-Local\n'}, cwd: 'p'},
    {name: 'a suffixed label with a path', files: {'p/.cuda-version': '12.4.1-../x\n'}, cwd: 'p'},
    {name: 'an empty suffix', env: {CUDAENV_VERSION: '12.4.1-'}},
    {name: 'a suffixed label not in the store', env: {CUDAENV_VERSION: '12.4.1-other'}},
    {name: 'alias in a file', files: {'p/.cuda-version': 'stable\n'}, cwd: 'p'},
    {name: 'alias chain', env: {CUDAENV_VERSION: 'chain'}},
    {name: 'alias loop', env: {CUDAENV_VERSION: 'loop1'}},
    {name: 'alias to a missing version', env: {CUDAENV_VERSION: 'gone'}},
    {name: 'unknown alias', files: {'p/.cuda-version': 'nosuch\n'}, cwd: 'p'},
    {name: 'a version with a prefix (v11.8)', files: {'p/.cuda-version': 'v11.8\n'}, cwd: 'p'},
    {name: 'an alias that looks like a version with a prefix', files: {'p/.cuda-version': 'cuda-12.2\n'}, cwd: 'p'},
    {name: 'missing version', files: {'p/.cuda-version': '10.2\n'}, cwd: 'p'},
    {name: 'file with shell syntax', files: {'p/.cuda-version': '$(touch PWNED)\n'}, cwd: 'p'},
    {name: 'file with a bad key line', files: {'p/.cuda-version': '12\nrm -rf /\n'}, cwd: 'p'},
    {name: 'file with control characters', files: {'p/.cuda-version': '12\n\u001b[2J\n'}, cwd: 'p'},
    {name: 'file with a NUL byte', files: {'p/.cuda-version': '12.4\u0000\n'}, cwd: 'p'},
    {name: 'file without a spec', files: {'p/.cuda-version': '# nothing\n'}, cwd: 'p'},
    {name: 'huge file', files: {'p/.cuda-version': `12\n${'#'.repeat(5000)}\n`}, cwd: 'p'},
    {name: 'file with a byte-order mark', files: {'p/.cuda-version': '\ufeff12.4\n'}, cwd: 'p'},
    {name: 'spec followed by a no-break space', files: {'p/.cuda-version': '12.4\u00a0\n'}, cwd: 'p'},
    {name: 'system in a file', files: {'p/.cuda-version': 'system\n'}, global: '12', cwd: 'p'},
    {name: 'file that is not UTF-8', files: {'p/.cuda-version': Buffer.from([0x31, 0x32, 0x0a, 0x23, 0xff, 0xfe, 0x0a])}, cwd: 'p'},
    {name: 'file with a UTF-8 comment', files: {'p/.cuda-version': '# für Jürgen — 12.4\n12.4\n'}, cwd: 'p'},
    {name: 'one line of 2 MB (the read stops at 4097 bytes)', files: {'p/.cuda-version': `12.4${' '.repeat(2 << 20)}`}, cwd: 'p'},
    // A bad file stops the search where it is, as in the CLI: the valid file above it (11.8) and the
    // global default (12) are never used in its place.
    {name: 'a symbolic link loop, a valid file above it', files: {'p/.cuda-version': '11.8\n'}, links: {'p/q/.cuda-version': '.cuda-version'}, global: '12', cwd: 'p/q'},
    {name: 'a loop of two links, no file above it', links: {'p/.cuda-version': 'other', 'p/other': '.cuda-version'}, global: '12', cwd: 'p'},
    {name: 'a link to a file that does not exist, a valid file above it', files: {'p/.cuda-version': '11.8\n'}, links: {'p/q/.cuda-version': 'missing'}, global: '12', cwd: 'p/q'},
    {name: 'a link through a file, a valid file above it', files: {'p/.cuda-version': '11.8\n', 'p/q/plain': 'x\n'}, links: {'p/q/.cuda-version': 'plain/x'}, cwd: 'p/q'},
    {name: 'a link to a directory, a valid file above it', files: {'p/.cuda-version': '11.8\n'}, links: {'p/q/.cuda-version': '.'}, cwd: 'p/q'},
    {name: 'a directory in its place, a valid file above it', files: {'p/.cuda-version': '11.8\n'}, dirs: ['p/q/.cuda-version'], cwd: 'p/q'},
    {name: 'a FIFO in its place, a valid file above it', files: {'p/.cuda-version': '11.8\n'}, fifos: ['p/q/.cuda-version'], cwd: 'p/q'},
    {name: 'a link to a FIFO', fifos: ['p/fifo'], links: {'p/.cuda-version': 'fifo'}, cwd: 'p'},
    {name: 'a link to a device', links: {'p/.cuda-version': '/dev/null'}, global: '12', cwd: 'p'},
    {name: 'a link to a valid file elsewhere', files: {'elsewhere/pin': '12.2\n'}, links: {'p/.cuda-version': '../elsewhere/pin'}, global: '11', cwd: 'p'},
  ];
  // The shim runs under bash where it exists (a bounded read without a process); run through
  // /bin/sh it takes the head/tr path: both must agree with the CLI.
  const interpreters = ['shebang', '/bin/sh'] as const;

  test.each(cases.flatMap((c) => interpreters.map((i) => [c.name, i, c] as const)))('%s (%s): the shim runs what `cudaenv current` reports', (_name, interp, c) => {
    const work = join(tmp.dir, 'cases', `${c.name.replace(/\W+/g, '-')}-${interp === 'shebang' ? 'x' : 'sh'}`);
    mkdirSync(work, {recursive: true});
    for (const [rel, text] of Object.entries(c.files ?? {})) {
      mkdirSync(join(work, rel, '..'), {recursive: true});
      writeFileSync(join(work, rel), text);
    }
    for (const rel of c.dirs ?? []) mkdirSync(join(work, rel), {recursive: true});
    for (const rel of c.fifos ?? []) {
      mkdirSync(join(work, rel, '..'), {recursive: true});
      expect(spawnSync('mkfifo', [join(work, rel)]).status).toBe(0);
    }
    for (const [rel, target] of Object.entries(c.links ?? {})) {
      mkdirSync(join(work, rel, '..'), {recursive: true});
      symlinkSync(target, join(work, rel));
    }
    const cwd = join(work, c.cwd ?? '.');
    mkdirSync(cwd, {recursive: true});
    const paths = pathsFor(store);
    if (c.global) writeFileSync(paths.globalFile, `${c.global}\n`);
    else rmSync(paths.globalFile, {force: true});

    const env = cliEnv(store, {PATH: `${paths.shims}:${sysbin}:/usr/bin:/bin`, ...c.env});
    const current = runCli(['current', '--json'], {env, cwd});
    const report = JSON.parse(current.stdout) as {version?: string | null; installed?: boolean; ok?: boolean; error?: {message: string}};
    const shimFile = join(paths.shims, 'whoami-cuda');
    const shim = interp === 'shebang'
      ? spawnSync(shimFile, [], {cwd, env, encoding: 'utf8'})
      : spawnSync('/bin/sh', [shimFile], {cwd, env, encoding: 'utf8'});
    expect(existsSync(join(cwd, 'PWNED'))).toBe(false);
    if (current.status === 0) {
      expect(shim.status).toBe(0);
      const ran = shim.stdout.trim() === 'system' ? 'system' : shim.stdout.trim().split('/').pop();
      expect(ran).toBe(report.version);
    } else {
      expect(shim.status).toBe(127);
      expect(shim.stderr).toMatch(/^cudaenv: /);
      expect(shim.stdout).toBe('');
      // A bad .cuda-version: the shim names the same file the CLI names.
      const named = /^(\/.*?\/\.cuda-version): /.exec(report.error?.message ?? '')?.[1];
      if (named !== undefined) expect(shim.stderr.split('\n')[0]).toMatch(new RegExp(`^cudaenv: ${named.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}: `));
    }
  });

  test('a suffixed label (12.4.1-local) in a .cuda-version runs that toolkit; 12.4 runs the release', () => {
    const paths = pathsFor(store);
    rmSync(paths.globalFile, {force: true});
    const project = join(tmp.dir, 'label-project');
    mkdirSync(project, {recursive: true});
    writeFileSync(join(project, '.cuda-version'), '12.4.1-local\n');
    const env = cliEnv(store, {PATH: `${paths.shims}:${sysbin}:/usr/bin:/bin`});
    const shimFile = join(paths.shims, 'whoami-cuda');
    for (const run of [() => spawnSync(shimFile, [], {cwd: project, env, encoding: 'utf8'}), () => spawnSync('/bin/sh', [shimFile], {cwd: project, env, encoding: 'utf8'})]) {
      const r = run();
      expect(r.stderr).toBe('');
      expect(r.stdout.trim()).toBe(join(realpathSync(paths.versions), '12.4.1-local'));
    }
    const release = spawnSync(shimFile, [], {cwd: project, env: {...env, CUDAENV_VERSION: '12.4'}, encoding: 'utf8'});
    expect(release.stdout.trim()).toBe(join(realpathSync(paths.versions), '12.4.1'));
  });

  test('a version written with a prefix: the shim and `cudaenv current` both say to write it without', () => {
    const paths = pathsFor(store);
    rmSync(paths.globalFile, {force: true});
    const proj = join(tmp.dir, 'prefixed');
    mkdirSync(proj, {recursive: true});
    writeFileSync(join(proj, '.cuda-version'), 'cuda-11.8\n');
    const env = cliEnv(store, {PATH: `${paths.shims}:/usr/bin:/bin`});
    const hint = 'Write the version without its prefix: 11.8 (cudaenv reads cuda-11.8 as an alias name, and there is no such alias).\n';
    for (const shim of [spawnSync(join(paths.shims, 'whoami-cuda'), [], {cwd: proj, env, encoding: 'utf8'}), spawnSync('/bin/sh', [join(paths.shims, 'whoami-cuda')], {cwd: proj, env, encoding: 'utf8'})]) {
      expect(shim.status).toBe(127);
      expect(shim.stderr).toBe(`cudaenv: no alias or version named cuda-11.8 (set by ${join(proj, '.cuda-version')})\n${hint}`);
    }
    const current = runCli(['current'], {env, cwd: proj});
    expect(current.status).toBe(1);
    expect(current.stderr).toBe(`cudaenv: cuda-11.8 (set by ${join(proj, '.cuda-version')}) is not installed\n${hint}`);
  });

  test('a file with a byte-order mark: the shim names the mark, as `cudaenv current` does', () => {
    const paths = pathsFor(store);
    rmSync(paths.globalFile, {force: true});
    const proj = join(tmp.dir, 'bom');
    mkdirSync(proj, {recursive: true});
    writeFileSync(join(proj, '.cuda-version'), '\ufeff12.4\r\n');
    const env = cliEnv(store, {PATH: `${paths.shims}:/usr/bin:/bin`});
    const what = `${join(proj, '.cuda-version')}: starts with a byte-order mark (BOM); save it as UTF-8 without one`;
    for (const shim of [spawnSync(join(paths.shims, 'whoami-cuda'), [], {cwd: proj, env, encoding: 'utf8'}), spawnSync('/bin/sh', [join(paths.shims, 'whoami-cuda')], {cwd: proj, env, encoding: 'utf8'})]) {
      expect(shim.status).toBe(127);
      expect(shim.stderr.split('\n')[0]).toBe(`cudaenv: ${what}`);
    }
    const current = runCli(['current'], {env, cwd: proj});
    expect(current.status).not.toBe(0);
    expect(current.stderr.split('\n')[0]).toBe(`cudaenv: ${what}`);
  });

  testIf(canDropToNobody, 'needs root and setpriv (util-linux) to run as user nobody')('a .cuda-version the user may not read: the shim says so under bash and /bin/sh, as `cudaenv current` does', () => {
    const paths = pathsFor(store);
    rmSync(paths.globalFile, {force: true});
    // nobody reaches the store and the project (the temporary directory is root's, 0700).
    chmodSync(tmp.dir, 0o755);
    const proj = join(tmp.dir, 'unreadable', 'p');
    mkdirSync(proj, {recursive: true});
    writeFileSync(join(tmp.dir, 'unreadable', '.cuda-version'), '11.8\n');
    const file = join(proj, '.cuda-version');
    writeFileSync(file, '12.2\n');
    chmodSync(file, 0o600);
    const env = cliEnv(store, {PATH: `${paths.shims}:/usr/bin:/bin`});
    const current = runCliAsNobody(['current'], env, proj);
    expect(current.status).toBe(1);
    expect(current.stderr.split('\n')[0]).toMatch(new RegExp(`^cudaenv: ${file.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}: cannot be read \\(EACCES`));
    for (const argv of [[join(paths.shims, 'whoami-cuda')], ['/bin/sh', join(paths.shims, 'whoami-cuda')]]) {
      const shim = spawnSync(NOBODY[0]!, [...NOBODY.slice(1), ...argv], {cwd: proj, env, encoding: 'utf8'});
      expect({argv, status: shim.status, line: shim.stderr.split('\n')[0]}).toEqual({argv, status: 127, line: `cudaenv: ${file}: cannot be read (permission denied)`});
    }
  });

  const canTrace = spawnSync('strace', ['-f', '-e', 'trace=process', '-o', '/dev/null', 'true']).status === 0;
  testIf(canTrace, 'strace is missing or cannot ptrace here')('in a directory with a .cuda-version, the shim starts no process before running the program (strace)', () => {
    const paths = pathsFor(store);
    rmSync(paths.globalFile, {force: true});
    const proj = join(tmp.dir, 'traced', 'p');
    mkdirSync(join(proj, 'a', 'b'), {recursive: true});
    writeFileSync(join(proj, '.cuda-version'), '# pinned\n12.2\ncudnn=9\n');
    const log = join(tmp.dir, 'traced', 'strace.log');
    const env = cliEnv(store, {PATH: `${paths.shims}:/usr/bin:/bin`});
    const r = spawnSync('strace', ['-f', '-e', 'trace=process', '-o', log, join(paths.shims, 'whoami-cuda')], {cwd: join(proj, 'a', 'b'), env, encoding: 'utf8'});
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe(join(paths.versions, '12.2.0'));
    const lines = readFileSync(log, 'utf8').split('\n');
    const target = lines.findIndex((l) => l.includes('execve(') && l.includes(join(paths.root, 'resolve', '12.2', 'bin', 'whoami-cuda')));
    expect(target).toBeGreaterThan(0);
    expect(lines.slice(0, target).filter((l) => /\b(clone3?|v?fork)\(/.test(l))).toEqual([]);
  });

  test('a shim passes arguments and the exit status through, and keeps the caller\'s locale', () => {
    const paths = pathsFor(store);
    writeFileSync(join(paths.versions, '12.4.1', 'bin', 'whoami-cuda'), '#!/bin/sh\nprintf "[%s]" "$@"; echo " LC_ALL=${LC_ALL-unset}"; exit 7\n');
    const env = cliEnv(store, {PATH: `${paths.shims}:/usr/bin:/bin`, CUDAENV_VERSION: '12.4'});
    delete env.LC_ALL;
    const r = spawnSync(join(paths.shims, 'whoami-cuda'), ['a b', '$(x)', ''], {env, encoding: 'utf8'});
    expect(r.stdout).toBe('[a b][$(x)][] LC_ALL=unset\n');
    expect(r.status).toBe(7);
    writeFileSync(join(paths.versions, '12.4.1', 'bin', 'whoami-cuda'), WHOAMI);
  });

  test('a registered toolkit deleted since: the shim and the hook say so and name `cudaenv rehash`, which brings them back in line with current', () => {
    const work = makeTempDir('cudaenv-gone-');
    try {
      const st = join(work.dir, 'store');
      const env = cliEnv(st, {PATH: `${join(st, 'shims')}:/usr/bin:/bin`});
      for (const v of ['12.4.1', '12.6.0']) expect(runCli(['add', makeFakeToolkit(join(work.dir, `tk-${v}`), {version: v})], {env}).status).toBe(0);
      rmSync(join(work.dir, 'tk-12.6.0'), {recursive: true});
      const proj = join(work.dir, 'proj');
      mkdirSync(proj);
      writeFileSync(join(proj, '.cuda-version'), '12\n');
      expect(runCli(['current'], {env, cwd: proj}).stdout).toBe(`12.4.1 (set by ${join(proj, '.cuda-version')})\n`);
      const shim = spawnSync(join(st, 'shims', 'nvcc'), ['--version'], {cwd: proj, env, encoding: 'utf8'});
      expect(shim.status).toBe(127);
      expect(shim.stderr).toBe(`cudaenv: CUDA 12 (set by ${join(proj, '.cuda-version')}) resolves to 12.6.0, whose toolkit is gone\nRun \`cudaenv rehash\` to use the best version still installed, or register the toolkit again with \`cudaenv add PATH\`.\n`);
      const init = runCli(['init', 'bash'], {env}).stdout;
      const rc = join(work.dir, 'rc.bash');
      writeFileSync(rc, init);
      const hook = spawnSync('bash', ['--rcfile', rc, '-i'], {cwd: work.dir, env, input: `cd ${JSON.stringify(proj)}\necho "H=\${CUDA_HOME-unset}"\n`, encoding: 'utf8'});
      expect(hook.stdout).toContain('H=unset');
      expect(hook.stderr).toContain(`cudaenv: CUDA 12 (set by ${join(proj, '.cuda-version')}) resolves to 12.6.0, whose toolkit is gone; run \`cudaenv rehash\` to use the best version still installed\n`);
      expect(runCli(['rehash'], {env}).status).toBe(0);
      const again = spawnSync(join(st, 'shims', 'nvcc'), ['--version'], {cwd: proj, env, encoding: 'utf8'});
      expect(again.stdout).toContain('V12.4.131');
    } finally {
      work.cleanup();
    }
  });
});
