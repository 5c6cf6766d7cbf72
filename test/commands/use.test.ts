/**
 * `cudaenv use`, `deactivate`, `init` and `rehash` as commands: what they print for a shell,
 * and what they say without the shell integration.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, REPO_ROOT, cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {makeStore} from '../core/shell/shell-harness.js';
import {testIf} from '../helpers/skip.js';

describe('cudaenv use / deactivate / init / rehash', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;

  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-use-');
    store = join(tmp.dir, 'store');
    await makeStore(store, ['12.4.1']);
  });
  afterAll(() => tmp.cleanup());

  test('without the shell integration, use and deactivate explain how to add it (exit 1)', () => {
    for (const args of [['use', '12.4'], ['deactivate']]) {
      const r = runCli(args, {env: cliEnv(store)});
      expect(r.status).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain('no cudaenv integration');
      expect(r.stderr).toContain('eval "$(cudaenv init bash)"');
    }
  });

  test('use prints shell code behind the marker; a missing version is an error with the install command', () => {
    const ok = runCli(['use', '12'], {env: cliEnv(store, {CUDAENV_SHELL: 'bash'})});
    expect(ok.status).toBe(0);
    expect(ok.stdout.split('\n')[0]).toBe('# cudaenv-shell-code v1');
    expect(ok.stdout).toContain('_cudaenv_switch 12.4.1 prepend pin');
    const none = runCli(['use', '12', '--ld-library-path', 'none'], {env: cliEnv(store, {CUDAENV_SHELL: 'fish'})});
    expect(none.stdout).toContain('_cudaenv_switch 12.4.1 none pin');
    const missing = runCli(['use', '11.8'], {env: cliEnv(store, {CUDAENV_SHELL: 'bash'})});
    expect(missing.status).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toContain('cudaenv install 11.8');
    const bad = runCli(['use', '$(reboot)'], {env: cliEnv(store, {CUDAENV_SHELL: 'bash'})});
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe('');
  });

  test('use --json outside the integration switches nothing and says so: the change is data to apply', () => {
    const env = cliEnv(store, {PATH: '/usr/bin:/bin'});
    delete env.LD_LIBRARY_PATH;
    const r = runCli(['use', '12.4', '--json'], {env});
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    const dir = join(store, 'versions', '12.4.1');
    expect(out).toMatchObject({version: '12.4.1', path: dir, ldLibraryPath: 'prepend', applied: false});
    expect(out.note).toMatch(/^nothing was switched/);
    expect(out.environment.set).toMatchObject({PATH: `${dir}/bin:/usr/bin:/bin`, LD_LIBRARY_PATH: `${dir}/lib64`, CUDA_HOME: dir, CUDAENV_VERSION: '12.4.1', _CUDAENV_APPLIED: '12.4.1'});
    // Applied by a caller, the data gives the state the integration would: deactivate restores it.
    const exports = Object.entries(out.environment.set as Record<string, string>).map(([k, v]) => `export ${k}='${v}'`).join('; ');
    const sh = spawnSync('bash', ['--norc', '-c', `${exports}; eval "$(${process.execPath} ${CLI} init bash)"; cudaenv deactivate 2>/dev/null; echo "$PATH|\${LD_LIBRARY_PATH-unset}|\${CUDA_HOME-unset}"`], {env, encoding: 'utf8'});
    expect(sh.stdout).toBe('/usr/bin:/bin|unset|unset\n');
  });

  test('use --json inside the integration switches the shell, then prints applied: true', () => {
    const env = cliEnv(store, {PATH: '/usr/bin:/bin'});
    const r = spawnSync('bash', ['--norc', '-c', `eval "$(${process.execPath} ${CLI} init bash)"; cudaenv use 12.4 --json 2>/dev/null > out.json; echo "$CUDA_HOME"`], {env, encoding: 'utf8', cwd: tmp.dir});
    expect(r.stdout).toBe(`${join(store, 'versions', '12.4.1')}\n`);
    expect(JSON.parse(readFileSync(join(tmp.dir, 'out.json'), 'utf8'))).toMatchObject({version: '12.4.1', applied: true});
  });

  test('use without a version takes what .cuda-version selects (not CUDAENV_VERSION, not the global default)', async () => {
    const work = makeTempDir('cudaenv-use-noarg-');
    try {
      const st = join(work.dir, 'store');
      await makeStore(st, ['11.8.0', '12.4.1']);
      {
        const proj = join(work.dir, 'proj', 'sub');
        mkdirSync(proj, {recursive: true});
        writeFileSync(join(work.dir, 'proj', '.cuda-version'), '11.8\n');
        const env = cliEnv(st, {CUDAENV_SHELL: 'bash', CUDAENV_VERSION: '12.4.1'});
        const inProj = runCli(['use', '--json'], {env, cwd: proj});
        expect(JSON.parse(inProj.stdout.slice(inProj.stdout.indexOf("'{") + 1, inProj.stdout.lastIndexOf("}'") + 1))).toMatchObject({version: '11.8.0', chosenBy: `set by ${join(work.dir, 'proj', '.cuda-version')}`});
        const none = runCli(['use'], {env, cwd: work.dir});
        expect(none.status).toBe(2);
        expect(none.stderr).toContain('no .cuda-version here or in a parent directory, and no global default');
        expect(runCli(['global', '12'], {env}).status).toBe(0);
        // A global default is no project file: as `nvm use` without .nvmrc, nothing is pinned (issue 44, item 6).
        const global = runCli(['use'], {env, cwd: work.dir});
        expect(global.status).toBe(2);
        expect(global.stdout).toBe('');
        expect(global.stderr).toContain(`no .cuda-version in ${work.dir} or a parent directory`);
        expect(global.stderr).toContain('The global default (12, now 12.4.1) applies');
        writeFileSync(join(work.dir, 'proj', '.cuda-version'), '12.6\n');
        const missing = runCli(['use'], {env, cwd: proj});
        expect(missing.status).toBe(1);
        expect(missing.stderr).toContain('cudaenv install 12.6');
      }
    } finally {
      work.cleanup();
    }
  });

  test('use and deactivate say in one line what changed; --quiet and the quiet setting leave it out', async () => {
    const work = makeTempDir('cudaenv-use-note-');
    try {
      const st = join(work.dir, 'store');
      await makeStore(st, ['11.8.0', '12.4.1']);
      {
        const env = cliEnv(st, {PATH: '/usr/bin:/bin'});
        delete env.LD_LIBRARY_PATH;
        const v = (l: string) => join(st, 'versions', l);
        const script = (lines: string[]) => spawnSync('bash', ['--norc', '-c', [`eval "$(${process.execPath} ${CLI} init bash)"`, ...lines].join('\n')], {env, encoding: 'utf8'});
        const r = script(['cudaenv use 12.4', 'cudaenv use 11 --ld-library-path none', 'cudaenv deactivate', 'cudaenv deactivate']);
        const notes = r.stderr.split('\n').filter((l) => !/libraries resolve|library resolves|no shared libraries to check/.test(l) && l !== '');
        expect(notes).toEqual([
          `cudaenv: now CUDA 12.4.1 (was none); LD_LIBRARY_PATH: added ${v('12.4.1')}/lib64`,
          `cudaenv: now CUDA 11.8.0 (was 12.4.1); LD_LIBRARY_PATH: removed ${v('12.4.1')}/lib64`,
          'cudaenv: deactivated CUDA 11.8.0 (the shell is as before cudaenv); LD_LIBRARY_PATH untouched',
          'cudaenv: nothing to deactivate (no cudaenv version in this shell)',
        ]);
        const quiet = script(['cudaenv use 12.4 -q', 'cudaenv deactivate --quiet']);
        expect(quiet.stderr).not.toContain('now CUDA');
        expect(quiet.stderr).not.toContain('deactivated');
        expect(runCli(['config', 'quiet', 'true'], {env}).status).toBe(0);
        const bySetting = script(['cudaenv use 12.4', 'cudaenv deactivate']);
        expect(bySetting.stderr).not.toContain('now CUDA');
        expect(bySetting.stderr).not.toContain('deactivated');
        expect(runCli(['config', 'quiet', 'maybe'], {env}).status).toBe(2);
      }
    } finally {
      work.cleanup();
    }
  });

  test('use: what the fast path does not parse goes through oclif, which explains it; --ld-library-path=none works on both', () => {
    const env = cliEnv(store, {CUDAENV_SHELL: 'bash'});
    const bogus = runCli(['use', '12.4', '--bogus'], {env});
    expect(bogus.status).toBe(2);
    expect(bogus.stdout).toBe('');
    expect(bogus.stderr).toContain('--bogus');
    const two = runCli(['use', '12.4', '11.8'], {env});
    expect(two.status).toBe(2);
    expect(two.stdout).toBe('');
    const eq = runCli(['use', '--ld-library-path=none', '12.4'], {env});
    expect(eq.status).toBe(0);
    expect(eq.stdout).toContain('_cudaenv_switch 12.4.1 none pin');
    const badPolicy = runCli(['use', '12.4', '--ld-library-path', 'sometimes'], {env});
    expect(badPolicy.status).toBe(2);
    const help = runCli(['use', '--help'], {env});
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('--quiet');
  });

  test('init: an unknown shell is a usage error; the bash code parses with bash -n', () => {
    expect(runCli(['init', 'tcsh'], {env: cliEnv(store)}).status).toBe(2);
    const code = runCli(['init', 'bash'], {env: cliEnv(store)});
    expect(code.status).toBe(0);
    expect(spawnSync('bash', ['-n'], {input: code.stdout}).status).toBe(0);
    // The launcher, which starts Node with the loader's variables cleared (bin/cudaenv).
    expect(code.stdout).toContain(`_CUDAENV_BIN=${join(REPO_ROOT, 'bin', 'cudaenv')}`);
  });

  test('rehash lists the shims and writes the hook index', () => {
    const r = runCli(['rehash', '--json'], {env: cliEnv(store)});
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({shims: join(store, 'shims'), programs: ['nvcc', 'ptxas']});
    expect(readFileSync(join(store, 'switch', 'index'), 'utf8')).toBe(' 12=12.4.1 12.4=12.4.1 12.4.1=12.4.1 latest=12.4.1 \n');
  });

  test('exec reports the check line at a terminal, and keeps a script\'s stderr clean', () => {
    const env = cliEnv(store, {PATH: '/usr/bin:/bin'});
    const plain = runCli(['exec', '--cuda', '12.4', '--', 'true'], {env});
    expect({status: plain.status, stderr: plain.stderr}).toEqual({status: 0, stderr: ''});
    const tty = spawnSync('script', ['-qec', `${process.execPath} ${CLI} exec --cuda 12.4 -- true`, '/dev/null'], {env, encoding: 'utf8'});
    expect(tty.status).toBe(0);
    expect(tty.stdout.replaceAll('\r', '')).toBe('cudaenv: CUDA 12.4.1: no shared libraries to check\n'); // the fake toolkit's lib64 holds no ELF file
  });

  test('bash: PROMPT_COMMAND is kept, as a string or an array, and the hook is added once', () => {
    const init = `eval "$(${process.execPath} ${CLI} init bash)"`;
    const env = cliEnv(store, {PATH: '/usr/bin:/bin'});
    const asString = spawnSync('bash', ['--norc', '-c', `PROMPT_COMMAND='echo user'; ${init}; ${init}; printf '%s\\n' "$PROMPT_COMMAND"`], {env, encoding: 'utf8'});
    expect(asString.stdout).toBe('_cudaenv_hook;echo user\n');
    const asArray = spawnSync('bash', ['--norc', '-c', `PROMPT_COMMAND=('echo one' 'echo two'); ${init}; ${init}; printf '[%s]' "\${PROMPT_COMMAND[@]}"`], {env, encoding: 'utf8'});
    expect(asArray.stdout).toBe('[_cudaenv_hook][echo one][echo two]');
    const empty = spawnSync('bash', ['--norc', '-c', `unset PROMPT_COMMAND; ${init}; printf '%s' "$PROMPT_COMMAND"`], {env, encoding: 'utf8'});
    expect(empty.stdout).toBe('_cudaenv_hook');
  });

  testIf(spawnSync('sh', ['-c', 'command -v zsh']).status === 0, 'needs zsh (apt-get install zsh)')('zsh with nounset, ksh_arrays and sh_word_split set by the user: the hook and use still work, $? is kept', () => {
    mkdirSync(join(tmp.dir, 'zp'), {recursive: true});
    const script = [
      'setopt nounset ksh_arrays sh_word_split',
      `eval "$(${process.execPath} ${CLI} init zsh)"`,
      'before=$PATH',
      `cd '${join(tmp.dir, 'zp')}'`,
      'false; _cudaenv_hook; echo "status=$?"',
      'cudaenv use 12.4 2>/dev/null; echo "$CUDA_HOME"',
      'cudaenv deactivate; [ "$PATH" = "$before" ] && [ -z "${CUDA_HOME+x}" ] && echo RESTORED',
    ].join('\n');
    const r = spawnSync('zsh', ['-f', '-c', script], {env: cliEnv(store, {PATH: '/usr/bin:/bin'}), encoding: 'utf8'});
    expect(r.stdout).toBe(`status=1\n${join(store, 'versions', '12.4.1')}\nRESTORED\n`);
  });

  for (const shell of ['zsh', 'fish']) testIf(spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0, `needs ${shell} (apt-get install ${shell})`).each([shell])('%s: a store path with a newline, quotes, $ and backticks: switching works and round-trips', async (sh) => {
    const odd = join(tmp.dir, `${sh} new\nline '$x' \`y\``);
    mkdirSync(odd);
    await makeStore(odd, ['12.4.1']);
    const script = sh === 'fish'
      ? [`${process.execPath} ${CLI} init fish | source`, 'set before "$PATH"', 'cudaenv use 12.4 2>/dev/null', 'printf "%s\\n--\\n" "$CUDA_HOME"', 'count $CUDA_HOME',
        'cudaenv deactivate', 'test "$PATH" = "$before"; and not set -q CUDA_HOME; and echo RESTORED']
      : [`eval "$(${process.execPath} ${CLI} init zsh)"`, 'before=$PATH', 'cudaenv use 12.4 2>/dev/null', 'printf "%s\\n--\\n" "$CUDA_HOME"', 'echo 1',
        'cudaenv deactivate', '[ "$PATH" = "$before" ] && [ -z "${CUDA_HOME+x}" ] && echo RESTORED'];
    const r = spawnSync(sh, sh === 'zsh' ? ['-f', '-c', script.join('\n')] : ['-c', script.join('\n')], {env: cliEnv(odd, {PATH: '/usr/bin:/bin', HOME: tmp.dir}), encoding: 'utf8'});
    expect(r.stdout).toBe(`${join(odd, 'versions', '12.4.1')}\n--\n1\nRESTORED\n`);
  });

  test('bash with set -u, and a store path with a newline: switching works and round-trips', () => {
    const odd = join(tmp.dir, 'new\nline $x `y`');
    mkdirSync(odd);
    return makeStore(odd, ['12.4.1']).then(() => {
      const script = [
        'set -u',
        `eval "$(${process.execPath} ${CLI} init bash)"`,
        '_cudaenv_hook',
        'before=$PATH',
        'cudaenv use 12.4 2>/dev/null',
        'printf "%s\\n--\\n" "$CUDA_HOME"',
        'cudaenv deactivate',
        '[ "$PATH" = "$before" ] && [ -z "${CUDA_HOME+x}" ] && echo RESTORED',
      ].join('\n');
      const r = spawnSync('bash', ['--norc', '-c', script], {env: cliEnv(odd, {PATH: '/usr/bin:/bin'}), encoding: 'utf8'});
      expect(r.stdout).toBe(`${join(odd, 'versions', '12.4.1')}\n--\nRESTORED\n`);
      expect(existsSync(join(odd, 'versions', '12.4.1'))).toBe(true);
    });
  });

  test('bash: a shell switched through an alias follows `cudaenv alias` at its next prompt, as current does', () => {
    const work = makeTempDir('cudaenv-alias-hook-');
    try {
      const st = join(work.dir, 'store');
      const env = cliEnv(st, {PATH: '/usr/bin:/bin'});
      for (const v of ['11.8.0', '12.2.2']) expect(runCli(['add', makeFakeToolkit(join(work.dir, `tk-${v}`), {version: v})], {env}).status).toBe(0);
      expect(runCli(['alias', 'stable', '12.2'], {env}).status).toBe(0);
      const proj = join(work.dir, 'proj');
      mkdirSync(proj);
      writeFileSync(join(proj, '.cuda-version'), 'stable\n');
      const script = [
        `eval "$(${process.execPath} ${CLI} init bash)"`,
        `cd '${proj}'`, '_cudaenv_hook 2>/dev/null', 'echo "A=$CUDA_HOME"',
        'cudaenv alias stable 11 >/dev/null', '_cudaenv_hook 2>/dev/null', 'echo "B=$CUDA_HOME"',
      ].join('\n');
      const r = spawnSync('bash', ['--norc', '-c', script], {env, encoding: 'utf8'});
      expect(r.stdout).toBe(`A=${join(st, 'versions', '12.2.2')}\nB=${join(st, 'versions', '11.8.0')}\n`);
      expect(runCli(['current'], {env, cwd: proj}).stdout).toBe(`11.8.0 (set by ${join(proj, '.cuda-version')}, alias stable)\n`);
    } finally {
      work.cleanup();
    }
  });
});
