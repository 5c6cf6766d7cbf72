/**
 * The zsh integration on the zsh of older clusters: Ubuntu 18.04's 5.4.2 (RHEL 8 has 5.5.1) and
 * 16.04's 5.1.1 (CentOS 7 had 5.0.2), unpacked by test/fixtures/fetch-cuda-libs.sh with the
 * libtinfo.so.5 they link where CUDAENV_UBUNTU_MIRROR names Ubuntu's archive (no current Debian
 * release has a zsh before 5.8), against this machine's zsh as the reference. It runs in a private mount namespace with its binary, modules and functions bound
 * over the system's (zsh finds them at the paths it was built with), through the README's rc line and
 * the start file, and must give the same switches, lines and CLI calls as the reference.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {rcLine} from '../../../src/core/shell/shell.js';
import {cliEnv, runCli} from '../../helpers/cli.js';
import {CAN_MOUNT_NAMESPACE, DOWNLOADED, NEEDS} from '../../helpers/capabilities.js';
import {testIf} from '../../helpers/skip.js';
import {cliCalls, have, oldShellFixture, runInteractive} from './shell-harness.js';

/** `binary`: where the package puts zsh (xenial's is zsh5, linked as zsh by its install script). */
const RELEASES = [{suite: 'bionic', version: '5.4.2', binary: 'bin/zsh'}, {suite: 'xenial', version: '5.1.1', binary: 'bin/zsh5'}] as const;
const root = (suite: string): string => join(DOWNLOADED, `zsh-${suite}`);
const fetched = RELEASES.every((r) => ['zsh', 'zsh-common', 'libtinfo5'].every((p) => existsSync(join(root(r.suite), `.unpacked-${p}`))));
const SYSTEM_DIRS = ['/usr/bin/zsh', '/usr/lib/x86_64-linux-gnu/zsh', '/usr/share/zsh'];
const usable = fetched && have('zsh') && have('patchelf') && CAN_MOUNT_NAMESPACE && SYSTEM_DIRS.every((d) => existsSync(d));
const reason = !fetched ? NEEDS.ubuntuOnly('zsh 5.4.2 and 5.1.1')
  : !have('zsh') ? NEEDS.tool('zsh') : !have('patchelf') ? NEEDS.tool('patchelf') : !CAN_MOUNT_NAMESPACE ? NEEDS.mountNamespace
  : `needs this machine's zsh at ${SYSTEM_DIRS.join(', ')} (Debian's layout) to bind the old one over`;

describe('the zsh integration on older zsh releases', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  let home: string;
  let cli: {bin: string; log: string};
  let proj: string;
  const oldZsh = new Map<string, string>();
  const extra: Array<{cleanup: () => void}> = [];

  beforeAll(async () => {
    if (!usable) return;
    // Each package's zsh, linked to its own libtinfo.so.5.
    for (const r of RELEASES) {
      const fixture = await oldShellFixture(`cudaenv-old-zsh-${r.suite}-`, join(root(r.suite), r.binary), join(root(r.suite), 'lib', 'x86_64-linux-gnu'));
      oldZsh.set(r.suite, fixture.shell);
      // The first release's directories serve every run; the others only hold their shell.
      if (tmp) extra.push(fixture.tmp);
      else ({tmp, store, home, proj, cli} = fixture);
    }
    // The README's rc line, sourcing the start file `cudaenv init` writes.
    expect(runCli(['init', 'zsh'], {env: cliEnv(store, {HOME: home})}).status).toBe(0);
    writeFileSync(join(home, '.zshrc'), ["PS1='%% '", 'unsetopt zle prompt_sp prompt_cr', rcLine('zsh'), `_CUDAENV_BIN='${cli.bin}'`, ''].join('\n'));
    spawnSync('sleep', ['1.1']); // the directories must be older than the cache files the hook compares with
  });
  afterAll(() => {
    tmp?.cleanup();
    for (const t of extra) t.cleanup();
  });

  const LINES = [
    'echo "zsh $ZSH_VERSION"',
    'cd PROJ', 'echo "home=$CUDA_HOME"', 'cd ..', 'cd PROJ', 'echo "home=$CUDA_HOME"',
    // Edited in place: only the prompt hook (precmd) sees it, before the next line's prompt.
    'echo 11.8 > .cuda-version', 'echo "home=$CUDA_HOME"',
    'cudaenv use 12.4', 'echo "home=$CUDA_HOME ld=$LD_LIBRARY_PATH version=$CUDAENV_VERSION"',
    'cudaenv use 99', 'echo "status=$?"',
    'cudaenv deactivate', 'echo "home=$CUDA_HOME ld=$LD_LIBRARY_PATH version=$CUDAENV_VERSION"',
    'echo v12.4 > .cuda-version', 'cd ..', 'cd PROJ',
  ];

  /** The scenario in the old zsh (or, with null, the system's), from the project's parent directory. */
  function run(suite: string | null): {out: string[]; err: string[]; calls: string[]} {
    writeFileSync(join(proj, '.cuda-version'), '12.4\n');
    writeFileSync(cli.log, '');
    for (const f of ['check-12.4.1', 'check-12.4.1.json', 'check-11.8.0', 'check-11.8.0.json']) rmSync(join(store, 'switch', f), {force: true});
    const wrapper = suite === null ? [] : [
      'unshare', '-m', 'sh', '-c',
      'z=$0; m=$1; f=$2; shift 2; mount --bind "$z" /usr/bin/zsh && mount --bind "$m" /usr/lib/x86_64-linux-gnu/zsh && mount --bind "$f" /usr/share/zsh && exec "$@"',
      oldZsh.get(suite)!, join(root(suite), 'usr', 'lib', 'x86_64-linux-gnu', 'zsh'), join(root(suite), 'usr', 'share', 'zsh'),
    ];
    const r = runInteractive('zsh', home, store, LINES.map((l) => l.replaceAll('PROJ', `'${proj}'`)), {LD_LIBRARY_PATH: '/opt/x'}, tmp.dir, wrapper);
    const clean = (text: string) => text.split('\n').map((l) => l.replace(/^(% )+/, '')).filter((l) => l !== '' && l !== 'exit');
    return {out: clean(r.stdout), err: clean(r.stderr), calls: cliCalls(cli.log)};
  }

  for (const release of RELEASES) {
    testIf(usable, reason)(`zsh ${release.version} (Ubuntu ${release.suite}): the same switches, lines and CLI calls as this machine's zsh`, () => {
      const reference = run(null);
      const old = run(release.suite);
      expect(old.out[0]).toBe(`zsh ${release.version}`);
      // The reference itself did the work (and so the comparison means something).
      expect(reference.out.slice(1)).toEqual([
        `home=${store}/versions/12.4.1`, `home=${store}/versions/12.4.1`,
        `home=${store}/versions/11.8.0`,
        `home=${store}/versions/12.4.1 ld=${store}/versions/12.4.1/lib64:/opt/x version=12.4.1`,
        'status=1',
        'home= ld=/opt/x version=',
      ]);
      expect(reference.err).toContain(`cudaenv: no alias or version named v12.4 (set by ${join(proj, '.cuda-version')}); write the version without its prefix: 12.4`);
      expect(old.out.slice(1)).toEqual(reference.out.slice(1));
      expect(old.err).toEqual(reference.err);
      expect(old.calls).toEqual(reference.calls);
      // Nothing zsh itself complains about (a syntax or builtin an older release lacks).
      expect(old.err.filter((l) => !l.startsWith('cudaenv') && !l.startsWith('Install it with') && !l.startsWith('No CUDA release '))).toEqual([]);
    });
  }
});
