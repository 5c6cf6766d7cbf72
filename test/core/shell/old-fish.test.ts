/**
 * The fish integration on the fish releases users still have: the 3.1 line (Debian 11's 3.1.2; Ubuntu
 * 20.04 has 3.1.0) and, where CUDAENV_UBUNTU_MIRROR names Ubuntu's archive, Ubuntu 22.04's 3.3
 * (test/fixtures/fetch-cuda-libs.sh unpacks them), against this machine's fish as the reference.
 * Those releases have no `$(...)`, no `path` builtin, one name per `set -e`, and refuse `return`
 * outside a function: code that uses any of them fails to load there, and the rc line's fallback
 * hides it behind a Node.js start or leaves the shell without the integration. Each old fish runs
 * in a private mount namespace with its binary and data directory bound over the system's (Debian's
 * build looks for its functions in /usr/share/fish only), and must give the same switches, lines
 * and CLI calls as the reference.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, mkdirSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {rcLine} from '../../../src/core/shell/shell.js';
import {cliEnv, runCli} from '../../helpers/cli.js';
import {CAN_MOUNT_NAMESPACE, DOWNLOADED, NEEDS} from '../../helpers/capabilities.js';
import {testIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {cliCalls, have, loggingCli, makeStore, quietFishHome, runInteractive} from './shell-harness.js';

/** `ubuntu`: only Ubuntu's archive has that release line (fetched where CUDAENV_UBUNTU_MIRROR is set). */
const RELEASES = [
  {suite: 'jammy', distribution: 'Ubuntu', version: '3.3.1', ubuntu: true},
  {suite: 'bullseye', distribution: 'Debian', version: '3.1.2', ubuntu: false},
] as const;
const root = (suite: string): string => join(DOWNLOADED, `fish-${suite}`);
const fetched = (suite: string): boolean => existsSync(join(root(suite), '.unpacked-fish')) && existsSync(join(root(suite), '.unpacked-fish-common'));
const system = have('fish') && existsSync('/usr/bin/fish') && existsSync('/usr/share/fish') && CAN_MOUNT_NAMESPACE;
const usable = (r: (typeof RELEASES)[number]): boolean => system && fetched(r.suite);
const reason = (r: (typeof RELEASES)[number]): string => !have('fish') ? NEEDS.tool('fish') : !CAN_MOUNT_NAMESPACE ? NEEDS.mountNamespace
  : r.ubuntu ? NEEDS.ubuntuOnly(`fish ${r.version}`) : `needs fish ${r.version}: bash test/fixtures/fetch-cuda-libs.sh`;

describe('the fish integration on older fish releases', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  let home: string;
  let cli: {bin: string; log: string};
  let proj: string;

  beforeAll(async () => {
    if (!RELEASES.some(usable)) return;
    tmp = makeTempDir('cudaenv-old-fish-');
    store = join(tmp.dir, 'store');
    await makeStore(store, ['11.8.0', '12.4.1']);
    home = join(tmp.dir, 'home');
    proj = join(tmp.dir, 'proj');
    mkdirSync(proj);
    writeFileSync(join(proj, '.cuda-version'), '12.4\n');
    cli = loggingCli(tmp.dir);
    // The README's rc line, sourcing the start file `cudaenv init` writes (no `cudaenv` on PATH:
    // a start file an old fish cannot load leaves the shell without the integration).
    expect(runCli(['init', 'fish'], {env: cliEnv(store, {HOME: home})}).status).toBe(0);
    mkdirSync(join(home, '.config', 'fish'), {recursive: true});
    quietFishHome(home);
    writeFileSync(join(home, '.config', 'fish', 'config.fish'), [
      "function fish_prompt; echo -n '> '; end", 'function fish_greeting; end', 'function fish_title; end',
      rcLine('fish').replace('~/.cudaenv', store), `set -g _CUDAENV_BIN '${cli.bin}'`, '',
    ].join('\n'));
    spawnSync('sleep', ['1.1']); // fish's hook compares whole seconds: the directories must be older than the cache file
  });
  afterAll(() => tmp?.cleanup());

  const LINES = [
    'echo "fish $version"',
    `cd PROJ`, 'echo "home=$CUDA_HOME"', 'cd ..', `cd PROJ`, 'echo "home=$CUDA_HOME"',
    'cudaenv use 11.8', 'echo "home=$CUDA_HOME ld=$LD_LIBRARY_PATH version=$CUDAENV_VERSION"',
    'cudaenv use 99', 'echo "status=$status"',
    'cudaenv deactivate', 'echo "home=$CUDA_HOME ld=$LD_LIBRARY_PATH version=$CUDAENV_VERSION"',
    'echo ".cuda-version is v12.4" ; echo v12.4 > .cuda-version', 'cd ..', 'cd PROJ',
  ];

  /** The scenario in the fish at `suite` (null: the system's), from the project's parent directory. */
  function run(suite: string | null): {out: string[]; err: string[]; calls: string[]} {
    writeFileSync(join(proj, '.cuda-version'), '12.4\n');
    writeFileSync(cli.log, '');
    // Each run starts with no cached check: the first switch checks, the second is answered by the hook.
    for (const f of ['check-12.4.1', 'check-12.4.1.json', 'check-11.8.0', 'check-11.8.0.json']) rmSync(join(store, 'switch', f), {force: true});
    const wrapper = suite === null ? [] : [
      'unshare', '-m', 'sh', '-c', 'b=$0; s=$1; shift; mount --bind "$b" /usr/bin/fish && mount --bind "$s" /usr/share/fish && exec "$@"',
      join(root(suite), 'usr', 'bin', 'fish'), join(root(suite), 'usr', 'share', 'fish'),
    ];
    const r = runInteractive('fish', home, store, LINES.map((l) => l.replaceAll('PROJ', `'${proj}'`)), {LD_LIBRARY_PATH: '/opt/x'}, tmp.dir, wrapper);
    const clean = (text: string) => text.split('\n').map((l) => l.replace(/\x1b\[[0-9;?]*[a-zA-Z]/g, '').replace(/^(> )+/, '')).filter((l) => l !== '');
    return {out: clean(r.stdout), err: clean(r.stderr), calls: cliCalls(cli.log)};
  }

  for (const release of RELEASES) {
    testIf(usable(release), reason(release))(`fish ${release.version} (${release.distribution} ${release.suite}): the same switches, lines and CLI calls as this machine's fish`, () => {
      const reference = run(null);
      const old = run(release.suite);
      expect(old.out[0]).toBe(`fish ${release.version}`);
      // The reference itself did the work (and so the comparison means something).
      expect(reference.out.filter((l) => l.startsWith('home='))).toEqual([
        `home=${store}/versions/12.4.1`, `home=${store}/versions/12.4.1`,
        `home=${store}/versions/11.8.0 ld=${store}/versions/11.8.0/lib64:/opt/x version=11.8.0`,
        'home= ld=/opt/x version=',
      ]);
      expect(reference.calls).toEqual(['switch-check 12.4.1', 'use 11.8', 'use 99']);
      expect(reference.err).toContain('cudaenv: no alias or version named v12.4 (set by ' + join(proj, '.cuda-version') + '); write the version without its prefix: 12.4');
      expect(old.out.slice(1)).toEqual(reference.out.slice(1));
      expect(old.err).toEqual(reference.err);
      expect(old.calls).toEqual(reference.calls);
      // Nothing fish itself complains about (a syntax or builtin an older release lacks).
      expect(old.err.filter((l) => !l.startsWith('cudaenv') && !l.startsWith('Install it with') && !l.startsWith('No CUDA release '))).toEqual([]);
    });
  }
});
