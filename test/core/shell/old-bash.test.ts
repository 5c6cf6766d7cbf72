/**
 * The bash integration on bash before 4.4 (Ubuntu 16.04's 4.3, unpacked by
 * test/fixtures/fetch-cuda-libs.sh where CUDAENV_UBUNTU_MIRROR names Ubuntu's archive: no current
 * Debian release has bash 4; RHEL and CentOS 7 clusters run 4.2), against this machine's bash
 * as the reference. Their `${var@a}` is a "bad substitution" that stops reading the integration, and
 * CentOS 7's /etc/bashrc sets PROMPT_COMMAND, which is where the integration asked it: the prompt
 * hook was never installed, so a .cuda-version edited in place (or anything else only the prompt
 * hook notices) changed nothing.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {DOWNLOADED, NEEDS} from '../../helpers/capabilities.js';
import {testIf} from '../../helpers/skip.js';
import {cliCalls, have, oldShellFixture, runInteractive, writeRc} from './shell-harness.js';

const ROOT = join(DOWNLOADED, 'bash-xenial');
const fetched = existsSync(join(ROOT, '.unpacked-bash')) && existsSync(join(ROOT, '.unpacked-libtinfo5'));
const usable = fetched && have('patchelf') && have('bash');
const reason = !fetched ? NEEDS.ubuntuOnly('bash 4.3') : NEEDS.tool('patchelf');

describe('the bash integration on bash 4.3', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  let home: string;
  let cli: {bin: string; log: string};
  let proj: string;
  let oldBash: string;

  beforeAll(async () => {
    if (!usable) return;
    // The package's bash, linked to its own libtinfo.so.5.
    ({tmp, store, home, proj, cli, shell: oldBash} = await oldShellFixture('cudaenv-old-bash-', join(ROOT, 'bin', 'bash'), join(ROOT, 'lib', 'x86_64-linux-gnu')));
    // As CentOS 7's /etc/bashrc does before the user's rc: a PROMPT_COMMAND of the system's.
    writeRc('bash', home, {bin: cli.bin, before: "PROMPT_COMMAND='system_prompt_ran=1'"});
    spawnSync('sleep', ['1.1']);
  });
  afterAll(() => tmp?.cleanup());

  const LINES = [
    'echo "bash ${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}"', 'echo "pc=$PROMPT_COMMAND"',
    'cd PROJ', 'echo "home=$CUDA_HOME"',
    // Edited in place: only the prompt hook sees it, before the next line's prompt.
    'echo 11.8 > .cuda-version', 'echo "home=$CUDA_HOME ran=$system_prompt_ran"',
    'cudaenv use 12.4', 'echo "home=$CUDA_HOME version=$CUDAENV_VERSION"', 'cudaenv deactivate', 'echo "home=$CUDA_HOME"',
  ];

  function run(bash: string | null): {out: string[]; err: string[]; calls: string[]} {
    writeFileSync(join(proj, '.cuda-version'), '12.4\n');
    writeFileSync(cli.log, '');
    const wrapper = bash === null ? [] : ['sh', '-c', 'b=$0; shift; exec "$b" "$@"', bash];
    const r = runInteractive('bash', home, store, LINES.map((l) => l.replaceAll('PROJ', `'${proj}'`)), {}, tmp.dir, wrapper);
    const lines = (text: string) => text.split('\n').map((l) => l.replace(/^(\$ )+/, '')).filter((l) => l !== '' && l !== 'exit');
    return {out: lines(r.stdout), err: lines(r.stderr).filter((l) => !/job control|process group/.test(l)), calls: cliCalls(cli.log)};
  }

  testIf(usable, reason)('the prompt hook is installed beside the system\'s PROMPT_COMMAND, and every switch is the reference bash\'s', () => {
    const reference = run(null);
    const old = run(oldBash);
    expect(old.out[0]).toBe('bash 4.3');
    expect(reference.out.slice(1)).toEqual([
      'pc=_cudaenv_hook;system_prompt_ran=1',
      `home=${store}/versions/12.4.1`,
      `home=${store}/versions/11.8.0 ran=1`,
      `home=${store}/versions/12.4.1 version=12.4.1`,
      'home=', // deactivate: the shell as before cudaenv, until the directory or its file changes
    ]);
    expect(old.out.slice(1)).toEqual(reference.out.slice(1));
    expect(old.err).toEqual(reference.err);
    expect(old.calls.filter((c) => !c.startsWith('switch-check'))).toEqual(reference.calls.filter((c) => !c.startsWith('switch-check')));
    expect(old.err.filter((l) => /bad substitution|syntax error|command not found/.test(l))).toEqual([]);
  });
});
