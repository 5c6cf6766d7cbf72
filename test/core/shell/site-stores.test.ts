/**
 * Issue 45 in real shells: a site store beneath the user's, changed by its administrator while a
 * shell of the user runs. By default (CUDAENV_SITE_CHECK_INTERVAL unset) a prompt that changes
 * nothing starts no process and reads nothing of a site (strace -f); a version the site adds is
 * picked up where the shell needs it: `cd` into a project naming it (the hook's one sync) or
 * `cudaenv use`. With the opt-in interval the hook looks at the sites (a bounded child) at most once
 * per interval and picks a change up at that prompt. One the site removes while the shell uses it
 * gives one line and the shell falls back, as for a version uninstalled by hand (removed.test.ts).
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {chmodSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {execFileSync} from 'node:child_process';
import {join} from 'node:path';
import {CLI} from '../../helpers/cli.js';
import {describeIf, testIf} from '../../helpers/skip.js';
import {CAN_PTRACE, NEEDS} from '../../helpers/capabilities.js';
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
      // The hook looks at the sites at each prompt here (the opt-in CUDAENV_SITE_CHECK_INTERVAL=0), so
      // that a change is seen at the next one; the default (unset: no look at a prompt) is tested below.
      const run = (lines: string[], env: NodeJS.ProcessEnv = {}, wrapper: string[] = []) =>
        runInteractive(shell, home, store, lines, {CUDAENV_SITE_DIRS: site, CUDAENV_SITE_CHECK_INTERVAL: '0', ...env}, home, wrapper);
      const lines = (stderr: string) => stderr.split('\n').filter((l) => l.includes('cudaenv: ')).map((l) => l.slice(l.indexOf('cudaenv: ')));
      const afterMark = () => {
        const calls = cliCalls(cli.log);
        return calls.slice(calls.indexOf('MARK') + 1);
      };
      // A timeout(1) first on PATH that logs each run: the hook's look at the sites is one.
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'timeout'), `#!/bin/sh\necho probe >> '${dir}/probes.log'\nexec /usr/bin/timeout "$@"\n`);
      chmodSync(join(bin, 'timeout'), 0o755);
      writeFileSync(join(dir, 'probes.log'), '');
      const probes = () => readFileSync(join(dir, 'probes.log'), 'utf8').split('\n').filter(Boolean).length;
      return {dir, site, store, home, proj, log: cli.log, admin, snap, mark, run, lines, afterMark, prompt, bin, probes, vars: (name: string) => tracked(join(dir, name)), v: (l: string) => join(store, 'versions', l)};
    }

    test('a site version is usable, one the site adds appears at the next prompt, and a prompt that changes nothing starts no cudaenv process', async () => {
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

    test('by default (CUDAENV_SITE_CHECK_INTERVAL unset) no prompt looks at the sites; `cd` into a project naming a version the site added syncs once, `cudaenv use` takes one at once', async () => {
      const s = await scenario();
      makeFakeToolkit(join(s.site, 'tmp', 'stage2'), {version: '12.8.0', programs: ['ptxas']});
      const none = join(s.dir, 'none');
      mkdirSync(none);
      writeFileSync(join(none, '.cuda-version'), '13.0\n');
      const sub = join(s.dir, 'sub');
      mkdirSync(sub);
      writeFileSync(join(sub, '.cuda-version'), '13.1\n');
      const r = s.run([
        `${s.prompt ? 'emit fish_prompt; ' : ''}true${s.prompt}`, `true${s.prompt}`, `true${s.prompt}`,
        s.admin(`mv '${join(s.site, 'tmp', 'stage')}' '${join(s.site, 'versions', '12.6.0')}'`),
        `true${s.prompt}`, s.snap('quiet'),
        // A prompt that changes something: the spec 12.6 is not in the mirror, so the hook syncs once.
        s.mark, `cd '${s.proj}'`, s.snap('cd'), `echo CD >> '${s.log}'`,
        `true${s.prompt}`, `true${s.prompt}`, s.snap('same'),
        // bash and zsh: a `cd` in a command substitution starts no process (it would forget it looked).
        ...(shell === 'fish' ? [] : [`echo SUB >> '${s.log}'`, `x=$(cd '${sub}' && pwd)`, `echo SUBEND >> '${s.log}'`]),
        // A spec no site has: one sync, today's line, then nothing more at the prompts after it.
        `echo NONE >> '${s.log}'`, `cd '${none}'`, `true${s.prompt}`, `true${s.prompt}`, `echo USE >> '${s.log}'`,
        s.admin(`mv '${join(s.site, 'tmp', 'stage2')}' '${join(s.site, 'versions', '12.8.0')}'`),
        'cudaenv use 12.8 2>/dev/null', s.snap('used'),
      ], {CUDAENV_SITE_CHECK_INTERVAL: undefined, PATH: `${s.bin}:/usr/bin:/bin`});
      expect(r.status).toBe(0);
      // Not one bounded look at a prompt (a logging timeout(1) first on PATH counts them).
      expect(s.probes()).toBe(0);
      expect(s.vars('quiet').CUDA_HOME).toBeUndefined();
      expect(s.vars('cd').CUDA_HOME).toBe(s.v('12.6.0'));
      expect(s.vars('same').CUDA_HOME).toBe(s.v('12.6.0'));
      const calls = s.afterMark();
      const cut = (a: string, b: string) => calls.slice(calls.indexOf(a) + 1, calls.indexOf(b));
      // The hook's one sync, then the switch's check line (switch-check, as at any switch).
      expect(cut('MARK', 'CD')).toEqual(['rehash', 'switch-check 12.6.0']);
      expect(cut('NONE', 'USE')).toEqual(['rehash']);
      const missing = s.lines(r.stderr).filter((l) => l.includes('13.0'));
      expect(missing).toEqual([`cudaenv: CUDA 13.0 (set by ${join(none, '.cuda-version')}) is not installed; install it with \`cudaenv install 13.0\``]);
      expect(s.vars('used').CUDA_HOME).toBe(s.v('12.8.0'));
      if (shell !== 'fish') expect(cut('SUB', 'SUBEND')).toEqual([]);
    });

    test('opt-in CUDAENV_SITE_CHECK_INTERVAL=10: the hook looks at the sites once in 10 s, not at each prompt; a cudaenv command in between brings a change at once', async () => {
      const s = await scenario();
      const r = s.run([
        `${s.prompt ? 'emit fish_prompt; ' : ''}true${s.prompt}`, `true${s.prompt}`, `true${s.prompt}`,
        s.admin(`mv '${join(s.site, 'tmp', 'stage')}' '${join(s.site, 'versions', '12.6.0')}'`),
        `true${s.prompt}`, `true${s.prompt}`, s.snap('within'),
        `cudaenv current >/dev/null 2>&1${s.prompt}`, s.mark, `cd '${s.proj}'`, s.snap('in-proj'),
      ], {CUDAENV_SITE_CHECK_INTERVAL: '10', PATH: `${s.bin}:/usr/bin:/bin`});
      expect(r.status).toBe(0);
      // One look, at the shell's first prompt: the later prompts are within the interval.
      expect(s.probes()).toBe(1);
      expect(s.vars('within').CUDA_HOME).toBeUndefined();
      expect(s.vars('in-proj').CUDA_HOME).toBe(s.v('12.6.0'));
      // `cudaenv current` brought the site's 12.6.0 into the mirror: the `cd` needed no sync of its own.
      expect(s.afterMark()).toEqual(['switch-check 12.6.0']);
    });

    test('the site removes the version the shell uses, by default: one line at the next prompt and the fallback, with builtins only (no process, no look)', async () => {
      const s = await scenario();
      const r = s.run([
        s.snap('before'), 'cudaenv use 12.4 2>/dev/null', s.snap('used'), s.mark,
        s.admin(`rm -rf '${join(s.site, 'versions', '12.4.1')}'`), s.snap('after'), `true${s.prompt}`, `true${s.prompt}`, s.snap('later'),
      ], {CUDAENV_SITE_CHECK_INTERVAL: undefined, PATH: `${s.bin}:/usr/bin:/bin`});
      expect(r.status).toBe(0);
      expect(s.vars('used').CUDA_HOME).toBe(s.v('12.4.1'));
      const removed = s.lines(r.stderr).filter((l) => l.includes('12.4.1'));
      expect(removed).toEqual([
        `cudaenv: CUDA 12.4.1 was removed (${s.v('12.4.1')} is gone); this shell no longer uses it and falls back to what is selected here (\`cudaenv current\` says what); reinstall it with \`cudaenv install 12.4.1\``,
      ]);
      expect(s.vars('after')).toEqual(s.vars('before'));
      expect(s.vars('later')).toEqual(s.vars('before'));
      expect(s.afterMark()).toEqual([]);
      expect(s.probes()).toBe(0);
    });

    test('opt-in CUDAENV_SITE_CHECK_INTERVAL=0 and a site store that hangs (its generation a FIFO nobody writes): each prompt returns, one line, and the shell itself never touches a site store', async () => {
      const s = await scenario();
      const hanging = join(s.dir, 'hanging');
      mkdirSync(join(hanging, 'versions'), {recursive: true});
      mkdirSync(join(hanging, 'switch'));
      execFileSync('mkfifo', [join(hanging, 'switch', 'generation')]);
      const trace = join(s.dir, 'strace.log');
      // strace without -f: the shell's own system calls only, not its children's (the probe's, the CLI's).
      const wrapper = have('strace') ? ['strace', '-o', trace, '-e', 'trace=%file,read'] : [];
      const t0 = Date.now();
      const r = s.run([
        `${s.prompt ? 'emit fish_prompt; ' : ''}cudaenv use 11.8 2>/dev/null${s.prompt}`, s.snap('used'), `true${s.prompt}`, `true${s.prompt}`, s.snap('later'),
      ], {CUDAENV_SITE_DIRS: `${hanging}:${s.site}`, CUDAENV_SITE_TIMEOUT_MS: '500', PATH: `${s.bin}:/usr/bin:/bin`}, wrapper);
      const took = Date.now() - t0;
      expect(r.status).toBe(0);
      expect(took).toBeLessThan(30_000);
      expect(s.vars('used').CUDA_HOME).toBe(s.v('11.8.0'));
      expect(s.vars('later').CUDA_HOME).toBe(s.v('11.8.0'));
      // The hook's line, once (the prompts after it are within the minute before the next look).
      const hook = s.lines(r.stderr).filter((l) => l.includes('this shell goes on with'));
      expect(hook).toEqual([`cudaenv: warning: site store ${hanging} (CUDAENV_SITE_DIRS) did not answer within 500 ms (a network mount that hangs?); this shell goes on with what your store ${s.store} holds and looks again in a minute: fix the mount, or remove it from CUDAENV_SITE_DIRS`]);
      expect(s.probes()).toBe(1);
      if (wrapper.length > 0) {
        const touched = readFileSync(trace, 'utf8').split('\n').filter((l) => l.includes(hanging) || l.includes(`${s.site}/`) || l.includes(`"${s.site}"`));
        expect(touched).toEqual([]);
      }
    });

    testIf(CAN_PTRACE, NEEDS.ptrace)('by default, quiet prompts start no process at all (strace -f) and touch no site store, a hanging one configured too, while the shell uses a site version', async () => {
      const s = await scenario();
      const hanging = join(s.dir, 'hanging');
      mkdirSync(join(hanging, 'versions'), {recursive: true});
      mkdirSync(join(hanging, 'switch'));
      execFileSync('mkfifo', [join(hanging, 'switch', 'generation')]);
      const trace = join(s.dir, 'strace.log');
      const from = join(s.dir, 'quiet-from');
      const to = join(s.dir, 'quiet-to');
      // A builtin's redirection opens the file in the shell itself: the trace's marks.
      const touch = (file: string) => `${s.prompt ? 'true' : ':'} > '${file}'`;
      // The hanging store last: the CLI's look skips the stores after one that did not answer.
      const r = s.run([
        `${s.prompt ? 'emit fish_prompt; ' : ''}cudaenv use 12.4 2>/dev/null${s.prompt}`, s.snap('used'),
        touch(from), `true${s.prompt}`, `:${s.prompt}`, `true${s.prompt}`, `true${s.prompt}`, `true${s.prompt}`, touch(to), s.snap('later'),
      ], {CUDAENV_SITE_CHECK_INTERVAL: undefined, CUDAENV_SITE_DIRS: `${s.site}:${hanging}`, CUDAENV_SITE_TIMEOUT_MS: '500', PATH: `${s.bin}:/usr/bin:/bin`},
      ['strace', '-f', '-o', trace, '-e', 'trace=process,%file']);
      expect(r.status).toBe(0);
      expect(s.vars('used').CUDA_HOME).toBe(s.v('12.4.1'));
      expect(s.vars('later').CUDA_HOME).toBe(s.v('12.4.1'));
      const all = readFileSync(trace, 'utf8').split('\n');
      const a = all.findIndex((l) => l.includes(`"${from}"`));
      const b = all.findIndex((l) => l.includes(`"${to}"`));
      expect(a).toBeGreaterThan(0);
      expect(b).toBeGreaterThan(a);
      const quiet = all.slice(a + 1, b);
      // The control: the rest of the run does start processes the trace sees (the CLI for `use`).
      const spawns = (ls: string[]) => ls.filter((l) => /\b(clone3?|fork|vfork|execve)\(/.test(l) && !l.includes('CLONE_THREAD'));
      expect(spawns(all.slice(0, a)).length).toBeGreaterThan(0);
      expect(spawns(quiet)).toEqual([]);
      expect(quiet.filter((l) => l.includes(hanging) || l.includes(`${s.site}/`) || l.includes(`"${s.site}"`))).toEqual([]);
      // No bounded look at any prompt, and no warning of the hook's about the hanging site.
      expect(s.probes()).toBe(0);
      expect(s.lines(r.stderr).filter((l) => l.includes('this shell goes on with'))).toEqual([]);
    });
  });
}
