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

  test('use --json reports the version and the policy', () => {
    const r = runCli(['use', '12.4', '--json'], {env: cliEnv(store)});
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({version: '12.4.1', path: join(store, 'versions', '12.4.1'), ldLibraryPath: 'prepend'});
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
    expect(tty.stdout.replaceAll('\r', '')).toMatch(/^cudaenv: CUDA 12\.4\.1: all \d+ librar(y resolves|ies resolve)\n$/);
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

  (spawnSync('sh', ['-c', 'command -v zsh']).status === 0 ? test : test.skip)('zsh with nounset, ksh_arrays and sh_word_split set by the user: the hook and use still work, $? is kept', () => {
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

  const otherShells = ['zsh', 'fish'].filter((sh) => spawnSync('sh', ['-c', `command -v ${sh}`]).status === 0);
  if (otherShells.length < 2) console.warn('skipping some newline-path tests: zsh or fish is not installed');
  (otherShells.length > 0 ? test.each(otherShells) : test.skip.each(['zsh']))('%s: a store path with a newline, quotes, $ and backticks: switching works and round-trips', async (sh) => {
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
