import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, cliEnv, runCli} from '../helpers/cli.js';
import {canDropToNobody, cliForNobody, NOBODY} from '../helpers/nobody.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {testIf} from '../helpers/skip.js';
import {registerToolkit} from '../../src/core/toolkits/register.js';
import {pathsFor} from '../../src/core/store/paths.js';

let dir: string;
let cleanup: () => void;
let store: string;
let env: NodeJS.ProcessEnv;
let proj: string;
beforeEach(async () => {
  ({dir, cleanup} = makeTempDir());
  store = join(dir, 'store');
  env = cliEnv(store);
  // Registered in-process (what `cudaenv add` does; add-ls.test.ts runs the command): three CLI
  // starts per test saved, and these tests are about selecting, not adding.
  for (const v of ['11.8.0', '12.3.2', '12.4.1']) {
    await registerToolkit(pathsFor(store), makeFakeToolkit(join(dir, `cuda-${v}`), {version: v, programs: ['ptxas']}));
  }
  proj = join(dir, 'proj');
  mkdirSync(join(proj, 'src'), {recursive: true});
});
afterEach(() => cleanup());

describe('global, local, current, which', () => {
  test('local without a spec shows the nearest .cuda-version, as global shows its value; none: exit 1 naming the directory (issue 44, item 10)', () => {
    const sub = join(proj, 'src');
    let r = runCli(['local'], {env, cwd: sub});
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`cudaenv: no .cuda-version in ${sub} or a parent directory: this directory has no local version\nPin it with \`cudaenv local 12.4\`; \`cudaenv current\` shows the version that applies here (the global default, or system).\n`);
    expect(runCli(['local', '12.3'], {env, cwd: proj}).status).toBe(0);
    r = runCli(['local'], {env, cwd: sub});
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`12.3 (12.3.2) (set by ${join(proj, '.cuda-version')})\n`);
    expect(JSON.parse(runCli(['local', '--json'], {env, cwd: sub}).stdout)).toEqual({path: join(proj, '.cuda-version'), spec: '12.3', installed: true, resolves: '12.3.2'});
    // --dir looks up from another directory; a spec nothing installed matches says how to install it.
    writeFileSync(join(dir, '.cuda-version'), '10.2\n');
    r = runCli(['local', '--dir', dir], {env, cwd: sub});
    expect(r.stdout).toBe(`10.2 (set by ${join(dir, '.cuda-version')})\n`);
    expect(r.stderr).toContain('CUDA 10.2 is not installed yet; run `cudaenv install 10.2`');
  });

  test('current follows the precedence and names its origin', () => {
    let r = runCli(['current'], {env, cwd: proj});
    expect(r.stdout).toBe('system (no version selected)\n');
    expect(runCli(['global', '11'], {env}).stdout).toBe('Global default: 11 (11.8.0)\n');
    r = runCli(['current'], {env, cwd: proj});
    expect(r.stdout).toBe(`11.8.0 (set by the global default ${join(store, 'global')})\n`);
    expect(runCli(['local', '12.3'], {env, cwd: proj}).stdout).toBe(`Wrote ${join(proj, '.cuda-version')}: 12.3\n`);
    expect(readFileSync(join(proj, '.cuda-version'), 'utf8')).toBe('12.3\n');
    r = runCli(['current'], {env, cwd: join(proj, 'src')});
    expect(r.stdout).toBe(`12.3.2 (set by ${join(proj, '.cuda-version')})\n`);
    r = runCli(['current', '--json'], {env: {...env, CUDAENV_VERSION: '12'}, cwd: join(proj, 'src')});
    expect(JSON.parse(r.stdout)).toMatchObject({version: '12.4.1', spec: '12', origin: {kind: 'env'}, installed: true, path: join(store, 'versions', '12.4.1')});
  });

  test('the fast path and the oclif command print the same', () => {
    writeFileSync(join(proj, '.cuda-version'), '12\n');
    const fast = runCli(['current'], {env, cwd: proj});
    // An extra flag takes the oclif route; --json must agree with it too.
    const viaOclif = runCli(['current', '--json', '--json'], {env, cwd: proj});
    const fastJson = runCli(['current', '--json'], {env, cwd: proj});
    expect(fast.stdout).toBe(`12.4.1 (set by ${join(proj, '.cuda-version')})\n`);
    expect(JSON.parse(viaOclif.stdout)).toEqual(JSON.parse(fastJson.stdout));
  });

  test('a version that is not installed: exit 1 with the install command', () => {
    writeFileSync(join(proj, '.cuda-version'), '12.9\n');
    const r = runCli(['current'], {env, cwd: proj});
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`cudaenv: 12.9 (set by ${join(proj, '.cuda-version')}) is not installed\nInstall it with \`cudaenv install 12.9\`, or choose another version with \`cudaenv use\`.\n`);
  });

  test('an invalid .cuda-version gives one line naming it, and executes nothing', () => {
    writeFileSync(join(proj, '.cuda-version'), `$(touch ${join(dir, 'pwned')})\n`);
    const r = runCli(['current'], {env, cwd: proj});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cudaenv: ${join(proj, '.cuda-version')}: line 1 "$(touch`);
    expect(() => readFileSync(join(dir, 'pwned'))).toThrow();
  });

  test('which prints the program of the active version', () => {
    writeFileSync(join(proj, '.cuda-version'), '11.8\n');
    expect(runCli(['which', 'ptxas'], {env, cwd: proj}).stdout).toBe(`${join(store, 'versions', '11.8.0', 'bin', 'ptxas')}\n`);
    const missing = runCli(['which', 'ncu'], {env, cwd: proj});
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(`CUDA 11.8.0 has no program ncu (looked for ${join(store, 'versions', '11.8.0', 'bin', 'ncu')})`);
    expect(runCli(['which', '../../bin/sh'], {env, cwd: proj}).status).toBe(2);
  });

  test('aliases: alias, use through current, unalias', () => {
    expect(runCli(['alias'], {env}).stdout).toBe('No aliases. Create one with `cudaenv alias stable 12.4`.\n');
    expect(runCli(['alias', 'stable', '12.3'], {env}).stdout).toBe('stable -> 12.3 (now 12.3.2)\n');
    expect(runCli(['alias', 'next', '13'], {env}).stdout).toBe('next -> 13 (nothing installed matches it yet)\n');
    // As nvm's `nvm alias`: no arguments lists them, a name alone shows one.
    expect(runCli(['alias'], {env}).stdout).toBe('next -> 13 (nothing installed matches it)\nstable -> 12.3 (now 12.3.2)\n');
    expect(JSON.parse(runCli(['alias', '--json'], {env}).stdout)).toEqual({aliases: [{name: 'next', spec: '13', resolves: null}, {name: 'stable', spec: '12.3', resolves: '12.3.2'}]});
    expect(runCli(['alias', 'stable'], {env}).stdout).toBe('stable -> 12.3 (now 12.3.2)\n');
    const none = runCli(['alias', 'nosuch'], {env});
    expect(none.status).toBe(1);
    expect(none.stderr).toBe('cudaenv: there is no alias named nosuch\nList aliases with `cudaenv alias`; create one with `cudaenv alias NAME 12.4`.\n');
    // A target written as a version with a prefix is refused, as local and global refuse it.
    const prefixed = runCli(['alias', 'older', 'cuda-11.8'], {env});
    expect(prefixed.status).toBe(2);
    expect(prefixed.stderr).toContain('Write the version without its prefix: cudaenv alias older 11.8');
    expect(runCli(['alias', 'older'], {env}).status).toBe(1);
    writeFileSync(join(proj, '.cuda-version'), 'stable\n');
    expect(runCli(['current'], {env, cwd: proj}).stdout).toBe(`12.3.2 (set by ${join(proj, '.cuda-version')}, alias stable)\n`);
    expect(runCli(['alias', 'latest', '12'], {env}).status).toBe(2);
    expect(runCli(['unalias', 'stable'], {env}).status).toBe(0);
    expect(runCli(['unalias', 'stable'], {env}).status).toBe(1);
  });

  test('local keeps the comments and key=value lines of an existing file, and overwrites nothing it cannot read', () => {
    const file = join(proj, '.cuda-version');
    writeFileSync(file, '# pinned for the wheels\n12.3\ncudnn=9\n');
    expect(runCli(['local', '12.4'], {env, cwd: proj}).status).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe('# pinned for the wheels\n12.4\ncudnn=9\n');
    writeFileSync(file, '12.3\nsomething the user wrote\n');
    const invalid = runCli(['local', '12.4'], {env, cwd: proj});
    expect(invalid.status).toBe(1);
    expect(invalid.stderr).toContain(`${file}: line 2 "something the user wrote" is neither a comment nor key=value; not overwriting it`);
    expect(readFileSync(file, 'utf8')).toBe('12.3\nsomething the user wrote\n');
    const missingDir = join(dir, 'no', 'such', 'dir');
    const typo = runCli(['local', '12.4', '--dir', missingDir], {env, cwd: proj});
    expect(typo.status).toBe(2);
    expect(typo.stderr).toContain(`--dir ${missingDir} is not an existing directory`);
    expect(existsSync(join(dir, 'no'))).toBe(false);
  });

  test('an alias that exists but names a version not installed is not called missing', () => {
    expect(runCli(['alias', 'future', '12.6'], {env}).status).toBe(0);
    const r = runCli(['exec', '--cuda', 'future', '--', 'true'], {env, cwd: proj});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('CUDA future (future -> 12.6) is not installed (--cuda)');
    expect(r.stderr).toContain('cudaenv install 12.6');
    expect(runCli(['local', 'future'], {env, cwd: proj}).stderr).toBe('cudaenv: warning: CUDA future is not installed yet; run `cudaenv install 12.6`\n');
    expect(runCli(['global', 'nosuch'], {env}).stderr).toBe('cudaenv: warning: no alias or version named nosuch yet; create it with `cudaenv alias nosuch 12.4`\n');
    expect(runCli(['exec', '--cuda', 'nosuch', '--', 'true'], {env}).stderr).toContain('no alias or version named nosuch (--cuda)');
  });

  test('a version written with a prefix (v12.4, cuda-12.4) is refused by local and global with the spelling to use, and named in the other commands\' hints', () => {
    const local = runCli(['local', 'v12.4'], {env, cwd: proj});
    expect(local.status).toBe(2);
    expect(local.stderr).toBe('cudaenv: "v12.4" is not a version: cudaenv reads it as an alias name, and there is no such alias\nWrite the version without its prefix: cudaenv local 12.4\n');
    expect(existsSync(join(proj, '.cuda-version'))).toBe(false);
    const before = runCli(['global'], {env}).stdout;
    const global = runCli(['global', 'cuda-12.4'], {env});
    expect(global.status).toBe(2);
    expect(global.stderr).toContain('Write the version without its prefix: cudaenv global 12.4');
    expect(runCli(['global'], {env}).stdout).toBe(before);
    const exec = runCli(['exec', '--cuda', 'V12', '--', 'true'], {env});
    expect(exec.status).toBe(1);
    expect(exec.stderr).toBe('cudaenv: no alias or version named V12 (--cuda)\nWrite the version without its prefix: 12 (cudaenv reads V12 as an alias name, and there is no such alias).\n');
    expect(runCli(['install', 'v12.4'], {env}).stderr).toBe('cudaenv: the version "v12.4" is not a release spec\nWrite the version without its prefix: 12.4\n');
    // An alias of that name is an alias like any other.
    expect(runCli(['alias', 'v12', '12.4'], {env}).status).toBe(0);
    expect(runCli(['local', 'v12'], {env, cwd: proj}).status).toBe(0);
    expect(readFileSync(join(proj, '.cuda-version'), 'utf8')).toBe('v12\n');
  });

  // Root ignores file modes: the CLI runs as nobody (test/helpers/nobody.ts).
  testIf(canDropToNobody, 'needs root and setpriv (util-linux) to run the CLI as another user')('a store the user may not write: one message naming the directory and what to do, no stack trace', () => {
    // Root ignores file modes, so the commands run as nobody (setpriv) over a store owned by root.
    chmodSync(dir, 0o755);
    chmodSync(store, 0o755);
    const run = (args: string[], cwd = proj) => {
      const r = spawnSync(NOBODY[0]!, [...NOBODY.slice(1), process.execPath, cliForNobody(), ...args], {env, cwd, encoding: 'utf8'});
      return {status: r.status, stderr: r.stderr};
    };
    for (const args of [['alias', 'stable', '12'], ['global', '12'], ['rehash']]) {
      const r = run(args);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/^cudaenv: EACCES: permission denied, open '.*'\nYou may not write or read .*: run cudaenv as the owner of the store, fix its permissions, or point CUDAENV_DIR at a store you own\.\n$/);
      expect(r.stderr).not.toMatch(/\.tmp: run|    at /);
    }
    const local = run(['local', '12']);
    expect(local.status).toBe(1);
    expect(local.stderr).toBe(`cudaenv: cannot write ${join(proj, '.cuda-version')}: EACCES\nCheck that you may write in ${proj}, or give another directory with --dir.\n`);
    expect(run(['current']).status).toBe(0);
  });

  test('a missing argument is not read from a piped stdin (a script\'s `cudaenv global` or `local` shows, never sets)', () => {
    const show = runCli(['global'], {env, input: '12.4\n'});
    expect(show.stdout).toBe('system (no global default set)\n');
    expect(existsSync(join(store, 'global'))).toBe(false);
    const local = runCli(['local'], {env, cwd: proj, input: '12.4\n'});
    expect(local.status).toBe(1);
    expect(local.stderr).toContain(`no .cuda-version in ${proj} or a parent directory`);
    expect(existsSync(join(proj, '.cuda-version'))).toBe(false);
  });

  test('a damaged global file: exit 1 naming the file, with the commands that repair it', () => {
    writeFileSync(join(store, 'global'), 'bad spec\n');
    const expected = `cudaenv: the global default in ${join(store, 'global')} holds "bad spec", which is not a CUDA version spec\nSet it again with \`cudaenv global 12.4\`, or remove it with \`cudaenv global --unset\`.\n`;
    for (const args of [['current'], ['global'], ['which', 'nvcc']]) {
      const r = runCli(args, {env, cwd: proj});
      expect({args, status: r.status, stderr: r.stderr}).toEqual({args, status: 1, stderr: expected});
    }
    expect(runCli(['global', '12.4'], {env}).status).toBe(0);
    expect(runCli(['current'], {env, cwd: proj}).stdout).toBe(`12.4.1 (set by the global default ${join(store, 'global')})\n`);
  });

  test('unalias of the alias the global default uses warns, naming the global file and what the default becomes (issue 44, item 11)', () => {
    expect(runCli(['alias', 'stable', '12.4'], {env}).status).toBe(0);
    expect(runCli(['alias', 'prod', 'stable'], {env}).status).toBe(0);
    expect(runCli(['alias', 'spare', '11'], {env}).status).toBe(0);
    expect(runCli(['global', 'prod'], {env}).status).toBe(0);
    // An alias the default does not use: no warning.
    let r = runCli(['unalias', 'spare'], {env});
    expect({status: r.status, stderr: r.stderr}).toEqual({status: 0, stderr: ''});
    r = runCli(['unalias', 'stable'], {env});
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('Removed alias stable.\n');
    expect(r.stderr).toBe(`cudaenv: warning: the global default in ${join(store, 'global')} is prod, which led through alias stable: it now names no version, and \`cudaenv current\` outside a project, the shims and new shells stop with an error instead of using a version; set another default with \`cudaenv global 12.4\`, or \`cudaenv global --unset\` for the machine's own CUDA (system)\n`);
    const current = runCli(['current'], {env, cwd: proj});
    expect(current.status).toBe(1);
    expect(current.stderr).toContain(`prod (set by the global default ${join(store, 'global')}) is not installed`);
    expect(runCli(['global', 'stable'], {env}).status).toBe(0);
    expect(JSON.parse(runCli(['unalias', 'prod', '--json'], {env}).stdout)).toEqual({name: 'prod', removed: true, globalDefault: null});
    expect(runCli(['alias', 'stable', '12.4'], {env}).status).toBe(0);
    const j = runCli(['unalias', 'stable', '--json'], {env});
    expect(JSON.parse(j.stdout)).toEqual({name: 'stable', removed: true, globalDefault: 'stable'});
  });

  test('unalias takes alias names only: a path is refused and deletes nothing', () => {
    expect(runCli(['global', '12.4'], {env}).status).toBe(0);
    for (const name of ['../global', '../versions/12.4.1', '/etc/hostname']) {
      const r = runCli(['unalias', name], {env});
      expect({name, status: r.status}).toEqual({name, status: 2});
      expect(r.stderr).toContain(`alias name ${JSON.stringify(name)} is not allowed`);
    }
    expect(readFileSync(join(store, 'global'), 'utf8')).toBe('12.4\n');
    expect(existsSync(join(store, 'versions', '12.4.1', 'bin', 'nvcc'))).toBe(true);
  });

  test('a corrupted settings file: one message naming it, a quoted command to move it away, no stack trace', () => {
    const odd = join(dir, "it's store");
    const oddEnv = cliEnv(odd);
    mkdirSync(odd, {recursive: true});
    writeFileSync(join(odd, 'config.json'), '{bad');
    const r = runCli(['config'], {env: oddEnv});
    expect(r.status).toBe(1);
    const file = join(odd, 'config.json');
    const q = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
    expect(r.stderr).toBe(`cudaenv: the settings file ${file} is not valid JSON (Expected property name or '}' in JSON at position 1)\nFix it by hand, or move it away (mv ${q(file)} ${q(`${file}.bad`)}) to start from defaults.\n`);
  });

  test('a directory reached through a symlink: current looks upward from $PWD, as the shell hook and the shims do', () => {
    mkdirSync(join(dir, 'work'));
    mkdirSync(join(dir, 'data', 'proj'), {recursive: true});
    writeFileSync(join(dir, 'work', '.cuda-version'), '11.8\n');
    symlinkSync(join(dir, 'data', 'proj'), join(dir, 'work', 'proj'));
    const logical = join(dir, 'work', 'proj');
    const r = runCli(['current'], {env: {...env, PWD: logical}, cwd: logical});
    expect(r.stdout).toBe(`11.8.0 (set by ${join(dir, 'work', '.cuda-version')})\n`);
    const viaOclif = runCli(['current', '--json', '--json'], {env: {...env, PWD: logical}, cwd: logical});
    expect(JSON.parse(viaOclif.stdout)).toMatchObject({version: '11.8.0'});
    const shim = spawnSync('sh', ['-c', 'cd "$1" && nvcc --version', 'sh', logical], {env: {...env, PATH: `${join(store, 'shims')}:/usr/bin:/bin`}, encoding: 'utf8'});
    expect(shim.stdout).toContain('V11.8.131');
    // A stale $PWD (another directory) is not believed.
    expect(runCli(['current'], {env: {...env, PWD: join(dir, 'work')}, cwd: join(dir, 'data', 'proj')}).stdout).toBe('system (no version selected)\n');
  });

  test('a .cuda-version link to nothing (a loop, a missing target) stops the search there: current names it, as the shims and the shell hooks do (issue 46)', () => {
    writeFileSync(join(proj, '.cuda-version'), '11.8\n');
    const sub = join(proj, 'src');
    const file = join(sub, '.cuda-version');
    const message = `cudaenv: ${file}: is a symbolic link that cannot be followed (its target is missing or out of reach, or the links loop)\n`
      + `Fix or remove ${file}; it must hold one CUDA version spec such as 12.4 on its first line.\n`;
    for (const target of ['.cuda-version', 'missing']) {
      symlinkSync(target, file);
      const r = runCli(['current'], {env, cwd: sub});
      expect({target, status: r.status, stderr: r.stderr}).toEqual({target, status: 1, stderr: message});
      // local does not overwrite it either, as it leaves any invalid file alone.
      const local = runCli(['local', '12.4'], {env, cwd: sub});
      expect(local.status).toBe(1);
      expect(local.stderr.split('\n')[0]).toBe(`${message.split('\n')[0]}; not overwriting it`);
      expect(lstatSync(file).isSymbolicLink()).toBe(true);
      rmSync(file);
    }
  });

  test('a working directory deleted under the command: one message naming it, what to do', () => {
    const doomed = join(dir, 'doomed');
    mkdirSync(doomed);
    for (const args of [['current'], ['local', '12'], ['exec', '--', 'true']]) {
      mkdirSync(doomed, {recursive: true});
      const r = spawnSync('sh', ['-c', 'rmdir "$PWD" && exec "$@"', 'sh', process.execPath, CLI, ...args], {cwd: doomed, env: {...env, PWD: doomed}, encoding: 'utf8'});
      expect({args, status: r.status}).toEqual({args, status: 1});
      expect(r.stderr).toContain(`cudaenv: the current directory ${doomed} no longer exists\nChange to an existing directory (cd) and run the command again.\n`);
    }
  });

  test('12.04 is refused alike by install, use, local and a .cuda-version, each saying to write 12.4 (issue 44, item 11)', () => {
    const note = '"12.04" is not a CUDA version spec (write 12.4: no leading zeros)';
    // install checks the spec before anything else: no mirror is asked (this one refuses connections).
    for (const args of [['install', '12.04', '--mirror', 'http://127.0.0.1:9/'], ['use', '12.04'], ['local', '12.04'], ['global', '12.04'], ['exec', '--cuda', '12.04', 'true']]) {
      const r = runCli(args, {env: {...env, CUDAENV_SHELL: 'bash'}, cwd: proj});
      expect({args, status: r.status, stderr: r.stderr}).toEqual({args, status: 2, stderr: `cudaenv: the spec ${note}\nUse a version such as 12, 12.4 or 12.4.1, or latest, system, or an alias name.\n`});
    }
    writeFileSync(join(proj, '.cuda-version'), '12.04\n');
    const r = runCli(['current'], {env, cwd: proj});
    expect(r.status).toBe(1);
    expect(r.stderr.split('\n')[0]).toBe(`cudaenv: ${join(proj, '.cuda-version')}: line 1 ${note}`);
    // 12.0.10 has no leading zero: accepted.
    rmSync(join(proj, '.cuda-version'));
    const ok = runCli(['local', '12.0.10'], {env, cwd: proj});
    expect(ok.status).toBe(0);
    expect(ok.stderr).not.toContain('leading');
  });

  test('use 99 suggests no install that would fail: no release 99 exists (issue 44, item 11)', () => {
    const r = runCli(['use', '99'], {env: {...env, CUDAENV_SHELL: 'bash'}, cwd: proj});
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^cudaenv: CUDA 99 is not installed\nNo CUDA release 99 is known \(cudaenv's release table ends at \d+\.\d+\.\d+\): check the version; `cudaenv ls-remote` lists the releases the mirror offers, and `cudaenv add PATH` registers a toolkit you already have\.\n$/);
    expect(r.stderr).not.toContain('cudaenv install 99');
    // A release that exists but is not installed still gets its install command.
    expect(runCli(['use', '12.6'], {env: {...env, CUDAENV_SHELL: 'bash'}, cwd: proj}).stderr).toContain('`cudaenv install 12.6`');
  });

  test('bad usage exits 2', () => {
    expect(runCli(['global', 'not a spec'], {env}).status).toBe(2);
    expect(runCli(['ls', '--bogus'], {env}).status).toBe(2);
    expect(runCli(['local', '1.2.3.4'], {env, cwd: proj}).status).toBe(2);
  });
});

const canChown = process.getuid?.() === 0 && spawnSync('id', ['nobody']).status === 0;
describe('sudo cudaenv local (issue 46)', () => {
  const asRoot = testIf(canChown, 'needs root and a user nobody');
  const chownNobody = (path: string) => expect(spawnSync('chown', ['-h', '65534:65534', path]).status).toBe(0);

  asRoot('in a project owned by another user: refused before writing, with the command to run without sudo', () => {
    chownNobody(proj);
    const r = runCli(['local', '12.4'], {env: {...env, SUDO_USER: 'nobody'}, cwd: proj});
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`cudaenv: refusing to run \`cudaenv local\` as root in the directory ${proj}, which belongs to nobody: the files root creates there could no longer be changed by nobody\n`
      + `Run it without sudo (it needs no root): CUDAENV_DIR=${store} cudaenv local 12.4\n`);
    expect(existsSync(join(proj, '.cuda-version'))).toBe(false);
    // Without sudo's SUDO_USER (su, a root shell): run it as the directory's owner.
    const asOwner = runCli(['local', '12.4', '--dir', proj, '--json'], {env, cwd: dir});
    expect(asOwner.status).toBe(1);
    const out = JSON.parse(asOwner.stdout) as {error: {code: string; hint: string}};
    expect(out.error.code).toBe('foreign-directory');
    expect(out.error.hint).toBe(`Run it as the directory's owner: sudo -u nobody CUDAENV_DIR=${store} cudaenv local 12.4 --dir ${proj} --json`);
    expect(existsSync(join(proj, '.cuda-version'))).toBe(false);
  });

  asRoot('over another user\'s .cuda-version in a directory of root\'s: refused, the file left as it was', () => {
    writeFileSync(join(proj, '.cuda-version'), '11.8\n');
    chownNobody(join(proj, '.cuda-version'));
    const r = runCli(['local', '12.4'], {env: {...env, SUDO_USER: 'nobody'}, cwd: proj});
    expect(r.status).toBe(1);
    expect(r.stderr.split('\n')[0]).toBe(`cudaenv: refusing to run \`cudaenv local\` as root over the file ${join(proj, '.cuda-version')}, which belongs to nobody: the file root writes in its place could no longer be changed by nobody`);
    expect(readFileSync(join(proj, '.cuda-version'), 'utf8')).toBe('11.8\n');
  });

  asRoot('control: in root\'s own directory, root writes the file', () => {
    expect(runCli(['local', '12.4'], {env: {...env, SUDO_USER: 'nobody'}, cwd: proj}).status).toBe(0);
    expect(readFileSync(join(proj, '.cuda-version'), 'utf8')).toBe('12.4\n');
  });
});
