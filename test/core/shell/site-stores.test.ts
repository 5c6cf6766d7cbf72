/**
 * Issue 45 in real shells: a site store beneath the user's, changed by its administrator while a
 * shell of the user runs. A version the site adds is picked up at the next prompt (one CLI run for
 * the change, none at a prompt that changes nothing); one the site removes while the shell uses it
 * gives one line and the shell falls back, as for a version uninstalled by hand (removed.test.ts).
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI} from '../../helpers/cli.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {cliCalls, have, loggingCli, makeStore, runInteractive, tracked, writeRc, type ShellName} from './shell-harness.js';

const SHELLS: ShellName[] = ['bash', 'zsh', 'fish'];

for (const shell of SHELLS) {
  describeIf(have(shell), `needs ${shell} (apt-get install ${shell})`)(`${shell}: a site store changing under a running shell`, () => {
    let tmp: {dir: string; cleanup: () => void};
    let n = 0;
    beforeAll(() => {
      tmp = makeTempDir('cudaenv-site-shell-');
    });
    afterAll(() => tmp.cleanup());

    async function scenario() {
      const dir = join(tmp.dir, `s${++n}`);
      const site = join(dir, 'site');
      const store = join(dir, 'store');
      await makeStore(site, ['12.4.1']);
      await makeStore(store, ['11.8.0']);
      // What the administrator adds later, staged beside versions/ (an install ends with a rename).
      makeFakeToolkit(join(site, 'tmp', 'stage'), {version: '12.6.0', programs: ['ptxas']});
      const home = join(dir, 'home');
      mkdirSync(home, {recursive: true});
      const proj = join(dir, 'proj');
      mkdirSync(proj);
      writeFileSync(join(proj, '.cuda-version'), '12.6\n');
      const cli = loggingCli(dir);
      writeRc(shell, home, {bin: cli.bin});
      const prompt = shell === 'fish' ? '; emit fish_prompt' : '';
      const admin = (what: string) => `${what} && env CUDAENV_DIR='${site}' CUDAENV_SITE_DIRS= '${process.execPath}' '${CLI}' rehash >/dev/null${prompt}`;
      const snap = (name: string) => `env -0 > '${dir}/${name}'`;
      const mark = `echo MARK >> '${cli.log}'`;
      const run = (lines: string[]) => runInteractive(shell, home, store, lines, {CUDAENV_SITE_DIRS: site}, home);
      const lines = (stderr: string) => stderr.split('\n').filter((l) => l.includes('cudaenv: ')).map((l) => l.slice(l.indexOf('cudaenv: ')));
      const afterMark = () => {
        const calls = cliCalls(cli.log);
        return calls.slice(calls.indexOf('MARK') + 1);
      };
      return {dir, site, store, home, proj, admin, snap, mark, run, lines, afterMark, vars: (name: string) => tracked(join(dir, name)), v: (l: string) => join(store, 'versions', l)};
    }

    test('a site version is usable, one the site adds appears at the next prompt, and a prompt that changes nothing starts no process', async () => {
      const s = await scenario();
      const r = s.run([
        'cudaenv use 12.4 2>/dev/null', s.snap('at-site'), 'cudaenv deactivate 2>/dev/null',
        `cd '${s.proj}'`, s.snap('missing'),
        s.admin(`mv '${join(s.site, 'tmp', 'stage')}' '${join(s.site, 'versions', '12.6.0')}'`), s.snap('added'),
        s.mark, 'true', 'true', s.snap('same'),
      ]);
      expect(s.vars('at-site').CUDA_HOME).toBe(s.v('12.4.1'));
      expect(s.vars('missing').CUDA_HOME).toBeUndefined();
      expect(s.lines(r.stderr)).toContainEqual(expect.stringContaining(`cudaenv: CUDA 12.6 (set by ${join(s.proj, '.cuda-version')}) is not installed`));
      expect(s.vars('added').CUDA_HOME).toBe(s.v('12.6.0'));
      expect(s.vars('added').PATH?.split(':')[0]).toBe(join(s.v('12.6.0'), 'bin'));
      expect(s.vars('same').CUDA_HOME).toBe(s.v('12.6.0'));
      expect(s.afterMark()).toEqual([]);
    });

    test('the site removes the version the shell uses: one line at the next prompt, and the shell falls back', async () => {
      const s = await scenario();
      const r = s.run([
        s.snap('before'), 'cudaenv use 12.4 2>/dev/null', s.snap('used'),
        s.admin(`rm -rf '${join(s.site, 'versions', '12.4.1')}'`), s.snap('after'), 'true', s.snap('later'),
      ]);
      expect(s.vars('used').CUDA_HOME).toBe(s.v('12.4.1'));
      const removed = s.lines(r.stderr).filter((l) => l.includes('12.4.1'));
      expect(removed).toEqual([
        `cudaenv: CUDA 12.4.1 was removed (${s.v('12.4.1')} is gone); this shell no longer uses it and falls back to what is selected here (\`cudaenv current\` says what); reinstall it with \`cudaenv install 12.4.1\``,
      ]);
      expect(s.vars('after')).toEqual(s.vars('before'));
      expect(s.vars('later')).toEqual(s.vars('before'));
    });
  });
}
