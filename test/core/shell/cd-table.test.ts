/**
 * The same table of cases in bash, zsh and fish (issue 13): the version switches at the cd,
 * pushd or popd itself (bash wraps them, zsh has chpwd, fish the PWD event), so a command later
 * on the same line already runs the project's nvcc; a subshell switches alone; an edited
 * .cuda-version is seen at the next prompt, in all three alike. The shells start from the
 * store's start file (shell/init.SHELL, the rc line of the README) with no `cudaenv` on PATH,
 * so the fallback to `cudaenv init` cannot hide a broken start file.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {closeSync, mkdirSync, openSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {rcLine, startFileName} from '../../../src/core/shell/shell.js';
import {cliEnv, runCli} from '../../helpers/cli.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {have, makeStore, quietFishHome, runInteractive, type ShellName} from './shell-harness.js';

/** [command line in bash and zsh, the same in fish where it differs, versions nvcc reports]. */
const TABLE: Array<[string, string | null, string[]]> = [
  ['cd proj && nvcc --version', null, ['11.8']],
  ['cd ..; nvcc --version', null, ['12.2']],
  ['cd proj; nvcc --version', null, ['11.8']],
  ['cd .. && pushd proj >/dev/null && nvcc --version', null, ['11.8']],
  ['popd >/dev/null && nvcc --version', null, ['12.2']],
  ['cd proj && cd - >/dev/null && nvcc --version', null, ['12.2']],
  ['(cd proj && nvcc --version); nvcc --version', "fish -c 'cd proj && nvcc --version'; nvcc --version", ['11.8', '12.2']],
  ['f() { cd proj; nvcc --version; }; f', 'function f; cd proj; nvcc --version; end; f', ['11.8']],
  ['cd ../proj2 && nvcc --version', null, ['11.8']],
  ['echo 12.4 > .cuda-version; nvcc --version', null, ['11.8']],
  ['nvcc --version', null, ['12.4']],
];

const SHELLS: ShellName[] = ['bash', 'zsh', 'fish'];

function runFishOnPty(home: string, store: string, lines: string[], extra: NodeJS.ProcessEnv, cwd: string): {stdout: string; stderr: string} {
  const input = join(home, '.pty-input');
  writeFileSync(input, `${lines.join('\n')}\nexit\n`);
  const fd = openSync(input, 'r');
  try {
    const env = {...cliEnv(store, {HOME: home, TERM: 'dumb', XDG_CONFIG_HOME: join(home, '.config'), ...extra})};
    delete env.LD_LIBRARY_PATH;
    const r = spawnSync('script', ['-qec', 'fish -i', '/dev/null'], {cwd, env, stdio: [fd, 'pipe', 'pipe'], encoding: 'utf8', timeout: 60000});
    return {stdout: r.stdout, stderr: r.stderr};
  } finally {
    closeSync(fd);
  }
}

for (const shell of SHELLS) {
  describeIf(have(shell) && (shell !== 'fish' || have('script')), `${shell} (and for fish, script from util-linux) is not installed`)(`${shell}: the table of cd cases`, () => {
    let tmp: {dir: string; cleanup: () => void};
    let store: string;
    let home: string;
    let out: string;

    beforeAll(async () => {
      tmp = makeTempDir(`cudaenv-cd-${shell}-`);
      store = join(tmp.dir, 'store');
      await makeStore(store, ['11.8.0', '12.2.0', '12.4.1']);
      home = join(tmp.dir, 'home');
      out = join(tmp.dir, 'out');
      mkdirSync(join(out, 'proj'), {recursive: true});
      mkdirSync(join(out, 'proj2'), {recursive: true});
      writeFileSync(join(out, 'proj', '.cuda-version'), '11.8\n');
      writeFileSync(join(out, 'proj2', '.cuda-version'), '11\n');
      const env = cliEnv(store, {HOME: home});
      expect(runCli(['global', '12.2'], {env}).status).toBe(0);
      // `cudaenv init` writes the start file the rc line sources.
      expect(runCli(['init', shell], {env}).status).toBe(0);
      const rc = rcLine(shell).replace('~/.cudaenv', store);
      if (shell === 'fish') {
        mkdirSync(join(home, '.config', 'fish'), {recursive: true});
        quietFishHome(home);
        writeFileSync(join(home, '.config', 'fish', 'config.fish'), `function fish_prompt; echo -n '> '; end\nfunction fish_greeting; end\n${rc}\n`);
      } else {
        mkdirSync(home, {recursive: true});
        writeFileSync(join(home, shell === 'bash' ? '.bashrc' : '.zshrc'), `PS1='$ '\n${shell === 'zsh' ? 'unsetopt zle\n' : ''}${rc}\n`);
      }
    });
    afterAll(() => tmp.cleanup());

    test('every case gives the version in the table', () => {
      const lines = TABLE.map(([posix, fish]) => (shell === 'fish' ? fish ?? posix : posix));
      // node on PATH for the check after a switch (bin/run.cjs); no `cudaenv` command. fish
      // emits fish_prompt only at a terminal: it runs under `script`, on a pseudo-terminal.
      const env = {PATH: `${dirname(process.execPath)}:/usr/bin:/bin`};
      const r = shell === 'fish' ? runFishOnPty(home, store, lines, env, out) : runInteractive(shell, home, store, lines, env, out);
      const seen = [...r.stdout.matchAll(/release (\d+\.\d+),/g)].map((m) => m[1]);
      expect(r.stderr).not.toMatch(/command not found|Unknown command|unknown-command/);
      expect(seen).toEqual(TABLE.flatMap(([, , want]) => want));
    });
  });
}

describe('the rc line', () => {
  test.each(SHELLS)('%s: one line', (shell) => {
    expect(rcLine(shell)).not.toContain('\n');
    expect(rcLine(shell)).toContain(startFileName(shell));
  });
});
