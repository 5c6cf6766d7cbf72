import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {writeHook} from '../../../src/core/conda/hook-files.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {driver, envDiff, hasShell, readDump, runDriver, SHELLS, type Family, type ShellName, type Step} from './conda-sim.js';
import {makeCondaPrefix} from './fixtures-env.js';
import {describeIf} from '../../helpers/skip.js';
import {quoteCsh} from '../../../src/core/text/quote.js';

/*
 * conda's documented sequences, in real shells, on conda-like prefixes with a package's own
 * activation script that also changes LD_LIBRARY_PATH. After every sequence the exported
 * environment must equal the one before it, variable by variable.
 */

const tmp = makeTempDir('cudaenv-conda-shells-');
// Spaces, both quotes, $, ! and a backslash: every quoting rule gets exercised.
const TA = join(tmp.dir, `tool kit 'A' "q" $HOME !x \\y`);
const TB = join(tmp.dir, 'tkB');
const GONE = join(tmp.dir, 'removed-toolkit');
const A = join(tmp.dir, 'envs', 'a');
const B = join(tmp.dir, 'envs', 'b');
const C = join(tmp.dir, 'envs', 'c');

beforeAll(() => {
  for (const t of [TA, TB]) {
    mkdirSync(join(t, 'bin'), {recursive: true});
    mkdirSync(join(t, 'lib64'), {recursive: true});
  }
  makeCondaPrefix(A, 'A');
  makeCondaPrefix(B, 'B');
  makeCondaPrefix(C, 'C');
  writeHook(A, {version: '12.4.1', toolkit: TA, ldLibraryPath: 'prepend'});
  writeHook(B, {version: '12.2.0', toolkit: TB, ldLibraryPath: 'prepend'});
  writeHook(C, {version: '11.8.0', toolkit: GONE, ldLibraryPath: 'prepend'});
});
afterAll(() => tmp.cleanup());

const mark = (text: string): Step => ({raw: {
  posix: `echo ${text} >> "$TRACE_FILE"`, fish: `echo ${text} >> $TRACE_FILE`, csh: `echo ${text} >> $TRACE_FILE:q`,
} satisfies Record<Family, string>});

/** Fails the run (a line on stderr) if a hook left one of its shell temporaries behind. */
const LEFTOVERS: Step = {raw: {
  posix: `set | grep '^_cudaenv' >&2 || :`,
  fish: `set -n | grep '^_cudaenv' >&2`,
  csh: `set | grep '^_cudaenv' | /bin/sh -c 'cat >&2'`,
}};

/** Sequences: [name, steps]; each starts from `<name>.before` and ends at `<name>.after`. */
const SEQUENCES: Array<[string, Step[]]> = [
  ['simple', [{conda: ['activate', A]}, {dump: 'simple.mid'}, {conda: ['deactivate']}]],
  ['switch', [{conda: ['activate', A]}, {conda: ['activate', B]}, {dump: 'switch.mid'}, {conda: ['deactivate']}, {dump: 'switch.back'}, {conda: ['deactivate']}]],
  ['stacked', [{conda: ['activate', A]}, {conda: ['activate', '--stack', B]}, {dump: 'stacked.mid'}, {conda: ['deactivate']}, {dump: 'stacked.back'}, {conda: ['deactivate']}]],
  ['reactivate', [{conda: ['activate', A]}, {conda: ['reactivate']}, {conda: ['reactivate']}, {dump: 'reactivate.mid'}, {conda: ['deactivate']}]],
  ['twice', [{conda: ['activate', A]}, {conda: ['activate-scripts-again']}, {conda: ['activate-scripts-again']}, {dump: 'twice.mid'}, {conda: ['deactivate']}]],
  ['gone', [{conda: ['activate', C]}, {dump: 'gone.mid'}, {conda: ['deactivate']}]],
];

const STARTS: Record<string, NodeJS.ProcessEnv> = {
  unset: {},
  empty: {LD_LIBRARY_PATH: '', CUDA_HOME: ''},
  set: {LD_LIBRARY_PATH: '/usr/lib/x86_64-linux-gnu/extra:/opt/y', CUDA_HOME: '/opt/cuda', CUDA_PATH: '/opt/cuda'},
};

function baseEnv(start: NodeJS.ProcessEnv, trace: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: `/fake/conda/condabin:${process.env.PATH}`, HOME: process.env.HOME, LANG: 'C.UTF-8', CONDA_SHLVL: '0', TRACE_FILE: trace,
    ...start,
  };
  return env;
}

const first = (list: string | undefined) => (list ?? '').split(':')[0];

for (const shell of SHELLS as ShellName[]) {
  const run = describeIf(hasShell(shell), `needs ${shell} (apt-get install ${shell})`);
  run(`conda hook in ${shell}`, () => {
    for (const [startName, start] of Object.entries(STARTS)) {
      test(`every sequence restores the environment exactly (LD_LIBRARY_PATH ${startName})`, () => {
        const out = join(tmp.dir, 'runs', `${shell}-${startName}`);
        mkdirSync(out, {recursive: true});
        const trace = join(out, 'trace');
        writeFileSync(trace, '');
        const steps: Step[] = [];
        for (const [name, seq] of SEQUENCES) steps.push(mark(`--- ${name}`), {dump: `${name}.before`}, ...seq, {dump: `${name}.after`}, LEFTOVERS);
        const r = runDriver(shell, driver(shell, steps, out), out, baseEnv(start, trace));
        expect({status: r.status, stderr: r.stderr.replace(/^cudaenv: CUDA 11\.8\.0 .*\n/gm, '')}).toEqual({status: 0, stderr: ''});
        // One warning per activation of the hook whose toolkit has gone, nothing else.
        expect(r.stderr.split('\n').filter((l) => l.includes('no longer installed'))).toHaveLength(1);

        for (const [name] of SEQUENCES) {
          expect({sequence: name, diff: envDiff(readDump(out, `${name}.before`), readDump(out, `${name}.after`))}).toEqual({sequence: name, diff: []});
        }

        // While active, the toolkit comes first (cudaenv's script ran after the package's).
        const mid = readDump(out, 'simple.mid');
        expect(mid.get('CUDA_HOME')).toBe(TA);
        expect(mid.get('CUDA_PATH')).toBe(TA);
        expect(first(mid.get('PATH'))).toBe(join(TA, 'bin'));
        expect(mid.get('LD_LIBRARY_PATH')!.split(':').slice(0, 2)).toEqual([join(TA, 'lib64'), '/pkg/A/lib']);
        expect(mid.get('LD_LIBRARY_PATH')).not.toMatch(/:$/); // no empty entry (the current directory)
        for (const key of ['switch.mid', 'stacked.mid']) {
          const m = readDump(out, key);
          expect(m.get('CUDA_HOME')).toBe(TB);
          expect(first(m.get('PATH'))).toBe(join(TB, 'bin'));
          expect(m.get('PATH')!.split(':')).not.toContain(join(TA, 'bin'));
          expect(first(m.get('LD_LIBRARY_PATH'))).toBe(join(TB, 'lib64'));
          expect(m.get('LD_LIBRARY_PATH')!.split(':')).not.toContain(join(TA, 'lib64'));
        }
        for (const key of ['switch.back', 'stacked.back', 'reactivate.mid', 'twice.mid']) {
          const m = readDump(out, key);
          expect(m.get('CUDA_HOME')).toBe(TA);
          expect(m.get('PATH')!.split(':').filter((e) => e === join(TA, 'bin'))).toHaveLength(1);
          expect(first(m.get('PATH'))).toBe(join(TA, 'bin'));
          expect(m.get('PATH')!.split(':')).not.toContain(join(TB, 'bin'));
          expect(first(m.get('LD_LIBRARY_PATH'))).toBe(join(TA, 'lib64'));
          // After a stacked env's deactivation the package script restores a snapshot that
          // still holds A's entry, so only the switch and reactivation cases count exactly one.
          if (key !== 'stacked.back' && key !== 'twice.mid') expect(m.get('LD_LIBRARY_PATH')!.split(':').filter((e) => e === join(TA, 'lib64'))).toHaveLength(1);
        }
        // A toolkit that has gone: the hook changes nothing.
        expect(envDiff(readDump(out, 'gone.before'), readDump(out, 'gone.mid')).filter((d) => !/^(CONDA_|PATH:|_PKG_|LD_LIBRARY_PATH:)/.test(d))).toEqual([]);
        expect(readDump(out, 'gone.mid').get('CUDA_HOME')).toBe(start.CUDA_HOME);

        // Order: the package's activate script never sees cudaenv's entry (cudaenv runs after),
        // and its deactivate script never does either (cudaenv's deactivate runs first).
        const simple = readFileSync(trace, 'utf8').split('--- switch')[0];
        const pkgLines = simple.split('\n').filter((l) => l.startsWith('pkg-'));
        expect(pkgLines.map((l) => l.split(' ')[0])).toEqual(['pkg-activate', 'pkg-deactivate']);
        for (const l of pkgLines) expect(l).not.toContain(join(TA, 'lib64'));
      });
    }
  });
}

/*
 * Issue 46: the csh hook wrote its commands under /tmp/cudaenv-conda.<pid>, a name another user
 * could make first (the switch was then skipped, and a file there is theirs). Another user's
 * directory, holding a commands.csh, is planted at that name (and at the same name under
 * $TMPDIR) before the activation: the hook must switch as usual, read nothing of it, leave it
 * alone, and leave no directory of its own behind.
 */
const canChown = process.getuid?.() === 0;
describeIf(hasShell('tcsh') && canChown, hasShell('tcsh') ? 'needs root (to plant a directory owned by uid 65534)' : 'needs tcsh (apt-get install tcsh)')('conda hook in tcsh, another user\'s files at the old predictable name', () => {
  let pidFile: string;
  afterAll(() => {
    // The planted directory in /tmp, should the run have stopped before removing it.
    try {
      const pid = readFileSync(pidFile, 'utf8').trim();
      if (/^\d+$/.test(pid)) rmSync(`/tmp/cudaenv-conda.${pid}`, {recursive: true, force: true});
    } catch {
      // no run
    }
  });

  test('the hook still switches, reads none of it, and removes only its own private directory', () => {
    const out = join(tmp.dir, 'runs', 'tcsh-foreign');
    const tmpdir = join(tmp.dir, 'runs', 'tcsh-foreign-tmpdir');
    mkdirSync(out, {recursive: true});
    mkdirSync(tmpdir, {recursive: true});
    pidFile = join(out, 'pid');
    const trace = join(out, 'trace');
    writeFileSync(trace, '');
    const plant = (dir: string) => [
      `/bin/mkdir ${dir}`,
      `echo 'setenv PWNED 1' > ${dir}/commands.csh`,
      `/bin/chown -R 65534:65534 ${dir}`,
    ].join('\n');
    const steps: Step[] = [
      {raw: {posix: '', fish: '', csh: `echo $$ > ${quoteCsh(pidFile)}\n${plant('/tmp/cudaenv-conda.$$')}\n${plant('$TMPDIR:q/cudaenv-conda.$$')}`}},
      {dump: 'before'},
      {conda: ['activate', A]},
      {dump: 'mid'},
      {conda: ['deactivate']},
      {dump: 'after'},
      {raw: {posix: '', fish: '', csh: '/bin/ls -ln /tmp/cudaenv-conda.$$ > /dev/null && /bin/rm -rf /tmp/cudaenv-conda.$$'}},
    ];
    const r = runDriver('tcsh', driver('tcsh', steps, out), out, baseEnv({TMPDIR: tmpdir}, trace));
    expect({status: r.status, stderr: r.stderr}).toEqual({status: 0, stderr: ''});
    const mid = readDump(out, 'mid');
    expect(mid.get('CUDA_HOME')).toBe(TA);
    expect(first(mid.get('PATH'))).toBe(join(TA, 'bin'));
    expect(mid.has('PWNED')).toBe(false);
    expect(envDiff(readDump(out, 'before'), readDump(out, 'after'))).toEqual([]);
    // The planted directory under $TMPDIR is as it was; the hook's own directories are gone.
    const pid = readFileSync(pidFile, 'utf8').trim();
    expect(readdirSync(tmpdir)).toEqual([`cudaenv-conda.${pid}`]);
    expect(readFileSync(join(tmpdir, `cudaenv-conda.${pid}`, 'commands.csh'), 'utf8')).toBe('setenv PWNED 1\n');
    expect(statSync(join(tmpdir, `cudaenv-conda.${pid}`)).uid).toBe(65534);
  });
});

describeIf(hasShell('tcsh'), 'needs tcsh (apt-get install tcsh)')('conda hook in tcsh without a usable temporary directory', () => {
  test('one line saying what failed, the environment left as it was, activation goes on', () => {
    const out = join(tmp.dir, 'runs', 'tcsh-no-tmpdir');
    mkdirSync(out, {recursive: true});
    const trace = join(out, 'trace');
    writeFileSync(trace, '');
    const steps: Step[] = [{dump: 'before'}, {conda: ['activate', A]}, {dump: 'mid'}, {conda: ['deactivate']}];
    const r = runDriver('tcsh', driver('tcsh', steps, out), out, baseEnv({TMPDIR: join(tmp.dir, 'no such dir')}, trace));
    expect(r.status).toBe(0);
    expect(r.stderr.split('\n').filter((l) => l.startsWith('cudaenv: '))).toEqual(Array(2).fill('cudaenv: mktemp -d made no private temporary directory (is $TMPDIR, or /tmp where it is unset, writable?); the conda CUDA hook did nothing'));
    const mid = readDump(out, 'mid');
    expect(mid.get('CUDA_HOME')).toBeUndefined();
    expect(mid.get('PATH')!.split(':')).not.toContain(join(TA, 'bin'));
    expect(first(mid.get('PATH'))).toBe(join(A, 'bin'));
  });
});
