import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, existsSync, mkdirSync, readdirSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {describeIf} from '../helpers/skip.js';

/**
 * Under sudo the store is SUDO_USER's; commands that write to it must not leave root-owned
 * files there (the user could no longer change them). Reading commands still work.
 */
const canChown = process.getuid?.() === 0 && spawnSync('id', ['nobody']).status === 0;
const maybe = describeIf(canChown, 'needs root and a user nobody');

maybe('root in a store owned by another user', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  let toolkit: string;
  beforeAll(() => {
    tmp = makeTempDir();
    chmodSync(tmp.dir, 0o755);
    store = join(tmp.dir, 'store');
    toolkit = makeFakeToolkit(join(tmp.dir, 'cuda-12.4'), {version: '12.4.1'});
    expect(runCli(['add', toolkit], {env: cliEnv(store)}).status).toBe(0);
    mkdirSync(join(store, 'aliases'), {recursive: true});
    expect(spawnSync('chown', ['-R', 'nobody:nogroup', store]).status).toBe(0);
  });
  afterAll(() => tmp.cleanup());

  const listing = () => readdirSync(store, {recursive: true}).map(String).sort();

  test.each([
    [['global', '12']],
    [['global', '--unset']],
    [['alias', 'stable', '12']],
    [['unalias', 'stable']],
    [['rehash']],
    [['config', 'ldLibraryPath', 'none']],
    [['modulefiles']],
    [['add', '/usr/local/cuda-13.0', '--as', '13.0.0']],
  ])('sudo cudaenv %j is refused before writing, with the command to run instead', (argv) => {
    const before = listing();
    const r = runCli(argv, {env: cliEnv(store, {SUDO_USER: 'nobody'})});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`refusing to run \`cudaenv ${argv[0]}\` as root in the store ${store}, which belongs to nobody`);
    expect(r.stderr).toContain(`Run it without sudo (it needs no root): CUDAENV_DIR=${store} cudaenv ${argv.join(' ')}`);
    expect(listing()).toEqual(before);
  });

  test('sudo for a user whose store (and home) does not exist yet: refused, nothing created', () => {
    // nobody's home in /etc/passwd is /nonexistent: the nearest existing directory above the store is /.
    const home = spawnSync('sh', ['-c', 'getent passwd nobody | cut -d: -f6'], {encoding: 'utf8'}).stdout.trim();
    expect(existsSync(home)).toBe(false);
    const env = cliEnv(store, {SUDO_USER: 'nobody'});
    delete env.CUDAENV_DIR;
    const r = runCli(['global', '12'], {env});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`refusing to run \`cudaenv global\` as root in the store ${join(home, '.cudaenv')}, which belongs to nobody`);
    expect(r.stderr).toContain('Run it without sudo (it needs no root): cudaenv global 12');
    expect(existsSync(home)).toBe(false);
  });

  test('reading commands still work', () => {
    const env = cliEnv(store, {SUDO_USER: 'nobody'});
    expect(runCli(['ls'], {env}).status).toBe(0);
    expect(runCli(['global'], {env}).status).toBe(0);
    expect(runCli(['config'], {env}).status).toBe(0);
    expect(runCli(['current'], {env}).status).toBe(0);
  });
});
