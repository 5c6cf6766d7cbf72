/**
 * Issue 44, item 3: the version this shell uses is uninstalled (`cudaenv uninstall`) or its
 * directory removed by hand (as a site store might). At the next prompt the shell says so in one
 * line, starts no process for it, and falls back as it does for a .cuda-version naming a version
 * that is gone: nothing points into the removed directory any more (PATH, LD_LIBRARY_PATH,
 * CUDA_HOME, CUDA_PATH), and CUDAENV_VERSION is as before `cudaenv use`.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {writeHook} from '../../../src/core/conda/hook-files.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {cliCalls, have, loggingCli, makeStore, runInteractive, tracked, writeRc, type ShellName} from './shell-harness.js';

const SHELLS: ShellName[] = ['bash', 'zsh', 'fish'];

for (const shell of SHELLS) {
  describeIf(have(shell), `needs ${shell} (apt-get install ${shell})`)(`${shell}: the version in use is removed`, () => {
    let tmp: {dir: string; cleanup: () => void};
    let n = 0;
    beforeAll(() => {
      tmp = makeTempDir('cudaenv-removed-');
    });
    afterAll(() => tmp.cleanup());

    /** A fresh store, home, project (.cuda-version 11.8) and logged CLI for one scenario. */
    async function scenario(ld: string | undefined) {
      const dir = join(tmp.dir, `s${++n}`);
      const store = join(dir, 'store');
      await makeStore(store, ['11.8.0', '12.4.1']);
      const home = join(dir, 'home');
      mkdirSync(home, {recursive: true});
      const proj = join(dir, 'proj');
      mkdirSync(proj);
      writeFileSync(join(proj, '.cuda-version'), '11.8\n');
      const cli = loggingCli(dir);
      writeRc(shell, home, {bin: cli.bin});
      const snap = (name: string) => `env -0 > '${dir}/${name}'`;
      const vars = (name: string) => tracked(join(dir, name));
      const mark = `echo MARK >> '${cli.log}'`;
      // fish reading its commands from a file draws no prompt: the prompt's event is sent as a prompt sends it.
      const rm = (label: string) => `rm -rf '${join(store, 'versions', label)}'${shell === 'fish' ? '; emit fish_prompt' : ''}`;
      const run = (lines: string[]) => runInteractive(shell, home, store, lines, {LD_LIBRARY_PATH: ld}, home);
      // The shell's lines on stderr, after the prompts the interactive shell printed there.
      const removedLines = (stderr: string) => stderr.split('\n').filter((l) => l.includes('cudaenv: ')).map((l) => l.slice(l.indexOf('cudaenv: ')));
      const afterMark = () => {
        const calls = cliCalls(cli.log);
        return calls.slice(calls.indexOf('MARK') + 1);
      };
      return {dir, store, home, proj, cli, snap, vars, mark, rm, run, removedLines, afterMark, v: (l: string) => join(store, 'versions', l)};
    }

    const pointsInto = (vars: Record<string, string | undefined>, dir: string) =>
      Object.entries(vars).filter(([, value]) => value?.split(':').some((e) => e === dir || e.startsWith(`${dir}/`))).map(([k]) => k);

    test.each([['unset', undefined], ['set', '/opt/a::/opt/b']])('`use`, then the directory removed by hand (LD_LIBRARY_PATH %s)', async (_name, ld) => {
      const s = await scenario(ld);
      const r = s.run([s.snap('before'), 'cudaenv use 12.4 2>/dev/null', s.snap('used'), s.mark, s.rm('12.4.1'), s.snap('after'), s.snap('later')]);
      expect(s.vars('used').CUDA_HOME).toBe(s.v('12.4.1'));
      expect(s.removedLines(r.stderr)).toEqual([
        `cudaenv: CUDA 12.4.1 was removed (${s.v('12.4.1')} is gone); this shell no longer uses it and falls back to what is selected here (\`cudaenv current\` says what); reinstall it with \`cudaenv install 12.4.1\``,
      ]);
      expect(pointsInto(s.vars('after'), s.v('12.4.1'))).toEqual([]);
      // Nothing was selected before `use`: the shell is as it was, byte for byte.
      expect(s.vars('after')).toEqual(s.vars('before'));
      expect(s.vars('later')).toEqual(s.vars('before'));
      // The prompt that noticed it started no process.
      expect(s.afterMark()).toEqual([]);
    });

    test('`cudaenv uninstall` of the version `use` chose', async () => {
      const s = await scenario(undefined);
      const r = s.run([s.snap('before'), 'cudaenv use 12.4 2>/dev/null', `cudaenv uninstall 12.4.1 >/dev/null 2>&1${shell === 'fish' ? '; emit fish_prompt' : ''}`, s.snap('after')]);
      expect(s.removedLines(r.stderr)).toHaveLength(1);
      expect(s.removedLines(r.stderr)[0]).toContain('CUDA 12.4.1 was removed');
      expect(pointsInto(s.vars('after'), s.v('12.4.1'))).toEqual([]);
      expect(s.vars('after')).toEqual(s.vars('before'));
    });

    test('the auto-switched version of a project removed by hand: one line, no second one about the .cuda-version', async () => {
      const s = await scenario(undefined);
      const r = s.run([s.snap('before'), `cd '${s.proj}'`, s.snap('in'), s.mark, s.rm('11.8.0'), s.snap('after'), `cd '${s.home}'`, s.snap('out')]);
      expect(s.vars('in').CUDA_HOME).toBe(s.v('11.8.0'));
      const lines = s.removedLines(r.stderr).filter((l) => !/libraries|check/.test(l) || l.includes('removed'));
      expect(lines.filter((l) => l.includes('11.8'))).toEqual([
        `cudaenv: CUDA 11.8.0 was removed (${s.v('11.8.0')} is gone); this shell no longer uses it and falls back to what is selected here (\`cudaenv current\` says what); reinstall it with \`cudaenv install 11.8.0\``,
      ]);
      expect(pointsInto(s.vars('after'), s.v('11.8.0'))).toEqual([]);
      expect(s.vars('after')).toEqual(s.vars('before'));
      expect(s.vars('out')).toEqual(s.vars('before'));
      expect(s.afterMark()).toEqual([]);
    });

    test('a conda hook\'s version removed while it is the one in use: the shell falls back to the state before', async () => {
      const s = await scenario(undefined);
      const prefix = join(s.dir, 'env');
      mkdirSync(join(prefix, 'conda-meta'), {recursive: true});
      writeHook(prefix, {version: '11.8.0', toolkit: s.v('11.8.0'), ldLibraryPath: 'prepend'});
      const act = join(prefix, 'etc', 'conda', 'activate.d', `~~cudaenv.${shell === 'fish' ? 'fish' : 'sh'}`);
      const source = shell === 'fish' ? `set -gx CONDA_PREFIX '${prefix}'; source '${act}'` : `export CONDA_PREFIX='${prefix}'; . '${act}'`;
      const r = s.run([s.snap('before'), 'cudaenv use 12.4 2>/dev/null', source, 'cudaenv deactivate 2>/dev/null', s.snap('conda'), s.rm('11.8.0'), s.snap('after')]);
      expect(s.vars('conda').CUDA_HOME).toBe(s.v('11.8.0'));
      expect(s.removedLines(r.stderr).filter((l) => l.includes('was removed'))).toHaveLength(1);
      expect(pointsInto(s.vars('after'), s.v('11.8.0'))).toEqual([]);
      expect(s.vars('after')).toEqual(s.vars('before'));
    });
  });
}
