/**
 * Real interactive bash, zsh and fish: rc file with `cudaenv init`, cd in and out of nested
 * projects, use, deactivate, round trips from unset, empty and set states, hostile
 * .cuda-version files, and a store whose path holds spaces, quotes, `$` and backticks.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {existsSync, mkdirSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {spawnSync} from 'node:child_process';
import {makeTempDir} from '../../helpers/tmp.js';
import {cliCalls, have, loggingCli, makeStore, runInteractive, tracked, writeRc, type ShellName} from './shell-harness.js';
import {describeIf} from '../../helpers/skip.js';

const SHELLS: ShellName[] = ['bash', 'zsh', 'fish'];

for (const shell of SHELLS) {
  const d = describeIf(have(shell), `needs ${shell} (apt-get install ${shell})`);

  d(`${shell} integration`, () => {
    let tmp: {dir: string; cleanup: () => void};
    let store: string;
    let home: string;
    let snaps: string;
    let cli: {bin: string; log: string};

    beforeAll(async () => {
      tmp = makeTempDir('cudaenv-shell-');
      // Spaces, quotes, `$`, backticks and glob characters in the store path: all must arrive intact.
      store = join(tmp.dir, 'my store\'s "$HOME" `x` [*]?');
      // 12.4.1-local: a second 12.4.1 toolkit under a suffixed label (cudaenv add DIR --as 12.4.1-local).
      await makeStore(store, ['11.8.0', '12.4.1', '12.4.1-local']);
      home = join(tmp.dir, 'home');
      snaps = join(tmp.dir, 'snaps');
      mkdirSync(home, {recursive: true});
      mkdirSync(snaps, {recursive: true});
      cli = loggingCli(tmp.dir);
      writeRc(shell, home, {bin: cli.bin});
      mkdirSync(join(tmp.dir, 'proj', 'inner', 'deep'), {recursive: true});
      mkdirSync(join(tmp.dir, 'outside'), {recursive: true});
      writeFileSync(join(tmp.dir, 'proj', '.cuda-version'), '# pinned\n11.8\n');
      writeFileSync(join(tmp.dir, 'proj', 'inner', '.cuda-version'), '12.4\ncudnn=9\n');
    });
    afterAll(() => tmp.cleanup());

    const snap = (name: string) => `env -0 > '${snaps}/${shell}-${name}'`;
    const vars = (name: string) => tracked(join(snaps, `${shell}-${name}`));
    const v = (label: string) => join(store, 'versions', label);

    describe.each([
      ['unset', undefined],
      ['empty', ''],
      ['set', '/opt/a::/opt/b'],
    ])('LD_LIBRARY_PATH %s', (state, ld) => {
      test('cd in and out of nested projects, use, deactivate: exact round trips', () => {
        const tag = `rt-${state}`;
        const r = runInteractive(shell, home, store, [
          `cd '${tmp.dir}/outside'`, snap(`${tag}-0`),
          `cd '${tmp.dir}/proj'`, snap(`${tag}-1`),
          `cd '${tmp.dir}/proj/inner/deep'`, snap(`${tag}-2`),
          `cd '${tmp.dir}/outside'`, snap(`${tag}-3`),
          'cudaenv use 12.4', snap(`${tag}-4`),
          'cudaenv use 11 --ld-library-path none', snap(`${tag}-5`),
          `cd '${tmp.dir}/proj'`, snap(`${tag}-6`),
          'cudaenv deactivate', snap(`${tag}-7`),
          'cudaenv use system', snap(`${tag}-8`),
          'cudaenv deactivate', snap(`${tag}-9`),
        ], {LD_LIBRARY_PATH: ld}, join(tmp.dir, 'outside'));
        const before = vars(`${tag}-0`);
        expect(before.CUDA_HOME).toBeUndefined();
        expect(before.LD_LIBRARY_PATH).toBe(ld);
        const ldWith = (lib: string) => (ld ? `${lib}:${ld}` : lib);

        // Entering the project switches to 11.8, the nested one to 12.4.
        expect(vars(`${tag}-1`)).toEqual({
          PATH: `${v('11.8.0')}/bin:${before.PATH}`, LD_LIBRARY_PATH: ldWith(`${v('11.8.0')}/lib64`),
          CUDA_HOME: v('11.8.0'), CUDA_PATH: v('11.8.0'), CUDAENV_VERSION: undefined,
        });
        expect(vars(`${tag}-2`)).toMatchObject({PATH: `${v('12.4.1')}/bin:${before.PATH}`, LD_LIBRARY_PATH: ldWith(`${v('12.4.1')}/lib64`), CUDA_HOME: v('12.4.1')});
        // Leaving: the state before, byte for byte (no global default here).
        expect(vars(`${tag}-3`)).toEqual(before);
        // use pins CUDAENV_VERSION; a second use removes exactly what the first added.
        expect(vars(`${tag}-4`)).toEqual({...before, PATH: `${v('12.4.1')}/bin:${before.PATH}`, LD_LIBRARY_PATH: ldWith(`${v('12.4.1')}/lib64`), CUDA_HOME: v('12.4.1'), CUDA_PATH: v('12.4.1'), CUDAENV_VERSION: '12.4.1'});
        expect(vars(`${tag}-5`)).toEqual({...before, PATH: `${v('11.8.0')}/bin:${before.PATH}`, CUDA_HOME: v('11.8.0'), CUDA_PATH: v('11.8.0'), CUDAENV_VERSION: '11.8.0'});
        // CUDAENV_VERSION outranks .cuda-version: cd into the project keeps the pinned version.
        expect(vars(`${tag}-6`)).toEqual(vars(`${tag}-5`));
        expect(vars(`${tag}-7`)).toEqual(before);
        expect(vars(`${tag}-8`)).toEqual({...before, CUDAENV_VERSION: 'system'});
        expect(vars(`${tag}-9`)).toEqual(before);
        expect(r.stderr).not.toMatch(/command not found|syntax error|parse error|Unknown command/);
      });
    });

    test('a suffixed label in a .cuda-version switches to that toolkit; use 12.4 to the release; use LABEL pins the label', () => {
      mkdirSync(join(tmp.dir, 'labelled'), {recursive: true});
      writeFileSync(join(tmp.dir, 'labelled', '.cuda-version'), '12.4.1-local\n');
      const r = runInteractive(shell, home, store, [
        snap('label-0'), `cd '${tmp.dir}/labelled'`, snap('label-1'), 'cudaenv use 12.4', snap('label-2'),
        'cudaenv use 12.4.1-local', snap('label-3'), 'cudaenv deactivate', `cd '${tmp.dir}/outside'`, snap('label-4'),
      ], {}, join(tmp.dir, 'outside'));
      const before = vars('label-0');
      expect(vars('label-1')).toMatchObject({PATH: `${v('12.4.1-local')}/bin:${before.PATH}`, CUDA_HOME: v('12.4.1-local'), CUDA_PATH: v('12.4.1-local')});
      expect(vars('label-2')).toMatchObject({PATH: `${v('12.4.1')}/bin:${before.PATH}`, CUDA_HOME: v('12.4.1'), CUDAENV_VERSION: '12.4.1'});
      expect(vars('label-3')).toMatchObject({PATH: `${v('12.4.1-local')}/bin:${before.PATH}`, CUDA_HOME: v('12.4.1-local'), CUDAENV_VERSION: '12.4.1-local'});
      expect(vars('label-4')).toEqual(before);
      expect(r.stderr).not.toMatch(/command not found|syntax error|parse error|Unknown command|not a CUDA version spec/);
    });

    test('entries the user adds between switches stay where they are', () => {
      const add = shell === 'fish' ? 'set -gx PATH /user/first $PATH /user/last' : 'export PATH="/user/first:$PATH:/user/last"';
      runInteractive(shell, home, store, [
        snap('user-0'), 'cudaenv use 12', add, 'cudaenv use 11.8', snap('user-1'), 'cudaenv deactivate', snap('user-2'),
      ], {}, join(tmp.dir, 'outside'));
      const before = vars('user-0');
      expect(vars('user-1').PATH).toBe(`${v('11.8.0')}/bin:/user/first:${before.PATH}:/user/last`);
      expect(vars('user-2').PATH).toBe(`/user/first:${before.PATH}:/user/last`);
      expect(vars('user-2').CUDA_HOME).toBeUndefined();
    });

    test('a cached switch starts no CLI process; a not-installed version is reported once per directory change', () => {
      mkdirSync(join(tmp.dir, 'old'), {recursive: true});
      writeFileSync(join(tmp.dir, 'old', '.cuda-version'), '10.2\n');
      writeFileSync(cli.log, '');
      const r = runInteractive(shell, home, store, [
        `cd '${tmp.dir}/proj'`, `cd '${tmp.dir}/outside'`, `cd '${tmp.dir}/proj'`, `cd '${tmp.dir}/outside'`,
        `cd '${tmp.dir}/old'`, '', '', 'true', `cd '${tmp.dir}/outside'`, `cd '${tmp.dir}/old'`, '',
      ], {}, join(tmp.dir, 'outside'));
      // The check for (11.8.0, this LD_LIBRARY_PATH) ran at most once; the way back was cached.
      expect(cliCalls(cli.log).filter((c) => c.startsWith('switch-check'))).toHaveLength(cliCalls(cli.log).length);
      expect(cliCalls(cli.log).length).toBeLessThanOrEqual(1);
      const checkLines = r.stderr.split('\n').filter((l) => l.includes('cudaenv: CUDA 11.8.0'));
      expect(checkLines).toHaveLength(2);
      const missing = r.stderr.split('\n').filter((l) => l.includes('10.2'));
      expect(missing).toHaveLength(2);
      expect(missing[0]).toContain('cudaenv install 10.2');
    });

    test('aliases: followed in shell code; one naming a missing version, or no alias at all, is one clear line', () => {
      const aliases = join(store, 'aliases');
      mkdirSync(aliases, {recursive: true});
      writeFileSync(join(aliases, 'stable'), '11.8\n');
      writeFileSync(join(aliases, 'gone'), '10.0\n');
      for (const [name, spec] of [['al-ok', 'stable'], ['al-gone', 'gone'], ['al-none', 'nosuch'], ['al-prefixed', 'v11.8']]) {
        mkdirSync(join(tmp.dir, name), {recursive: true});
        writeFileSync(join(tmp.dir, name, '.cuda-version'), `${spec}\n`);
      }
      const r = runInteractive(shell, home, store, [
        `cd '${tmp.dir}/al-ok'`, snap('alias-ok'), `cd '${tmp.dir}/al-gone'`, `cd '${tmp.dir}/al-none'`, `cd '${tmp.dir}/al-prefixed'`,
      ], {}, join(tmp.dir, 'outside'));
      expect(vars('alias-ok').CUDA_HOME).toBe(v('11.8.0'));
      const lines = r.stderr.split('\n').filter((l) => l.includes('cudaenv:')).map((l) => l.slice(l.indexOf('cudaenv:')));
      expect(lines.filter((l) => l.includes('gone'))).toEqual([`cudaenv: CUDA gone (set by ${tmp.dir}/al-gone/.cuda-version) is not installed; install it with \`cudaenv install 10.0\``]);
      expect(lines.filter((l) => l.includes('nosuch'))).toEqual([`cudaenv: no alias or version named nosuch (set by ${tmp.dir}/al-none/.cuda-version); create the alias with \`cudaenv alias nosuch 12.4\``]);
      // nvm's v18 habit: the version to write, not an alias to create.
      expect(lines.filter((l) => l.includes('v11.8'))).toEqual([`cudaenv: no alias or version named v11.8 (set by ${tmp.dir}/al-prefixed/.cuda-version); write the version without its prefix: 11.8`]);
    });

    describe('hostile .cuda-version files execute nothing and give one line', () => {
      const cases: Array<[string, (dir: string) => void, RegExp]> = [
        ['command substitution', (d) => writeFileSync(join(d, '.cuda-version'), '$(touch PWNED)\n'), /is not a CUDA version spec/],
        ['backticks', (d) => writeFileSync(join(d, '.cuda-version'), '`touch PWNED`\n'), /is not a CUDA version spec/],
        ['shell syntax after a spec', (d) => writeFileSync(join(d, '.cuda-version'), '12.4; touch PWNED\n'), /is not a CUDA version spec/],
        ['key=value injection', (d) => writeFileSync(join(d, '.cuda-version'), '12.4\nx=$(touch PWNED)\n'), /neither a comment nor key=value/],
        ['huge file', (d) => writeFileSync(join(d, '.cuda-version'), `12.4\n${'#'.repeat(10000)}\n`), /more than 4096 bytes/],
        ['binary', (d) => writeFileSync(join(d, '.cuda-version'), Buffer.from([0x31, 0x32, 0x01, 0x02, 0x1b, 0x5b, 0x32, 0x4a, 0x0a])), /control characters or binary/],
        ['NUL byte after a spec', (d) => writeFileSync(join(d, '.cuda-version'), Buffer.from('12.4\0\n')), /control characters or binary/],
        ['64 MB of zeros', (d) => { spawnSync('truncate', ['-s', '64M', join(d, '.cuda-version')]); }, /control characters or binary|more than 4096 bytes/],
        ['directory', (d) => mkdirSync(join(d, '.cuda-version')), /is a directory/],
        ['FIFO', (d) => { spawnSync('mkfifo', [join(d, '.cuda-version')]); }, /not a regular file/],
        // Named, not shown: the mark is invisible inside a quoted line (Windows editors write it).
        ['UTF-8 byte-order mark', (d) => writeFileSync(join(d, '.cuda-version'), '\ufeff12.4\r\n'), /: starts with a byte-order mark \(BOM\); save it as UTF-8 without one/],
        ['not UTF-8 (Latin-1 in a comment)', (d) => writeFileSync(join(d, '.cuda-version'), Buffer.from('12.4\n# caf\xe9\n', 'latin1')), /is not UTF-8 text/],
        // fish's `read -n` read these one system call per byte without counting them: a minute's hang.
        ['64 MB of bytes that are not UTF-8', (d) => writeFileSync(join(d, '.cuda-version'), Buffer.alloc(64 * 1024 * 1024, 0xe9)), /more than 4096 bytes/],
        // `[ -e ]` is false for these: the hook passed over them to the file above (issue 46).
        ['a symbolic link loop', (d) => symlinkSync('.cuda-version', join(d, '.cuda-version')), /is a symbolic link that cannot be followed/],
        ['a loop of two links', (d) => { symlinkSync('other', join(d, '.cuda-version')); symlinkSync('.cuda-version', join(d, 'other')); }, /is a symbolic link that cannot be followed/],
        ['a link to a file that does not exist', (d) => symlinkSync('missing', join(d, '.cuda-version')), /is a symbolic link that cannot be followed/],
        ['a link to a directory', (d) => symlinkSync('.', join(d, '.cuda-version')), /is a directory/],
        ['a link to a device', (d) => symlinkSync('/dev/zero', join(d, '.cuda-version')), /not a regular file/],
      ];
      // A valid file above every hostile one: a bad file stops the search where it is (as in the
      // CLI and the shims), so this one is never used in its place.
      beforeAll(() => {
        mkdirSync(join(tmp.dir, 'hostile'), {recursive: true});
        writeFileSync(join(tmp.dir, 'hostile', '.cuda-version'), '11.8\n');
      });
      const hostile = (name: string, make: (dir: string) => void, message: RegExp): void => {
        const dir = join(tmp.dir, 'hostile', name.replace(/\W+/g, '-'));
        mkdirSync(dir, {recursive: true});
        make(dir);
        const r = runInteractive(shell, home, store, [snap(`h-${name}-0`), `cd '${dir}'`, '', snap(`h-${name}-1`), 'echo DONE'], {}, join(tmp.dir, 'outside'));
        expect(r.stdout).toContain('DONE'); // a FIFO did not hang the prompt
        expect(existsSync(join(dir, 'PWNED'))).toBe(false);
        // (zsh prints its prompt before a chpwd hook's line: take the line from "cudaenv:")
        const lines = r.stderr.split('\n').filter((l) => l.includes('cudaenv:')).map((l) => l.slice(l.indexOf('cudaenv:')));
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(join(dir, '.cuda-version'));
        expect(lines[0]).toMatch(message);
        expect(vars(`h-${name}-1`)).toEqual(vars(`h-${name}-0`));
      };
      test.each(cases)('%s', hostile);
      test('UTF-8 text in a comment is accepted, private-use characters too (fish encodes U+F600-U+F6FF like bytes that are not UTF-8)', () => {
        const dir = join(tmp.dir, 'utf8-comment');
        mkdirSync(dir, {recursive: true});
        writeFileSync(join(dir, '.cuda-version'), '12.4\n# caf\u00e9 \uf6e9 \uf600 \u2713\n');
        const r = runInteractive(shell, home, store, [`cd '${dir}'`, '', snap('utf8-comment')], {}, join(tmp.dir, 'outside'));
        expect(r.stderr.split('\n').filter((l) => l.includes('.cuda-version'))).toEqual([]);
        expect(vars('utf8-comment').CUDA_HOME).toBe(v('12.4.1'));
      });
    });
  });
}
