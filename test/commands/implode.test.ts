import {afterAll, describe, expect, test} from '@jest/globals';
import {existsSync, mkdirSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';

describe('cudaenv implode', () => {
  const {dir, cleanup} = makeTempDir();
  afterAll(cleanup);

  test('asks first (refuses without a terminal), then deletes the store and keeps registered toolkits', () => {
    const store = join(dir, 'store');
    const env = cliEnv(store);
    const tk = makeFakeToolkit(join(dir, 'tk'), {version: '12.4.1'});
    expect(runCli(['add', tk], {env}).status).toBe(0);
    let r = runCli(['implode'], {env, input: ''});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`implode deletes ${store} and asks first`);
    expect(existsSync(store)).toBe(true);
    r = runCli(['implode', '--yes', '--json'], {env});
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({store, exists: true, installed: [], registered: [{version: '12.4.1', target: tk}]});
    expect(existsSync(store)).toBe(false);
    expect(existsSync(join(tk, 'bin', 'nvcc'))).toBe(true);
  });

  test('--dry-run lists what would go and removes nothing; the closing advice names this store\'s shims, not ~/.cudaenv (issue 44, item 10)', () => {
    const store = join(dir, 'elsewhere', 'store');
    const env = cliEnv(store, {HOME: join(dir, 'home')});
    const tk = makeFakeToolkit(join(dir, 'tk2'), {version: '12.4.1'});
    expect(runCli(['add', tk], {env}).status).toBe(0);
    makeFakeToolkit(join(store, 'versions', '11.8.0'), {version: '11.8.0'});
    let r = runCli(['implode', '--dry-run'], {env, input: ''});
    expect(r.status).toBe(0);
    expect(r.stdout).toBe([
      `implode would delete ${store}, with:`,
      `  installed toolkits: ${join(store, 'versions', '11.8.0')}`,
      `  registered toolkits (only their links go; the directories stay): 12.4.1 -> ${tk}`,
      `  the shims (${join(store, 'shims')}), settings, aliases, the global default and the download cache`,
      'Nothing was removed (--dry-run).',
      '',
    ].join('\n'));
    expect(existsSync(join(store, 'versions', '11.8.0', 'bin', 'nvcc'))).toBe(true);
    r = runCli(['implode', '-n', '--json'], {env});
    expect(JSON.parse(r.stdout)).toMatchObject({store, exists: true, installed: ['11.8.0'], registered: [{version: '12.4.1', target: tk}], dryRun: true});
    expect(existsSync(join(store, 'versions', '11.8.0'))).toBe(true);
    // A directory implode would refuse is refused by --dry-run too, with the same message.
    const other = join(dir, 'not-a-store-2');
    mkdirSync(other);
    const refused = runCli(['implode', '--dry-run'], {env: cliEnv(other)});
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('does not look like a cudaenv store');
    r = runCli(['implode', '--yes'], {env});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`(and ${join(store, 'shims')} from PATH where you added it)`);
    expect(r.stdout).not.toContain('~/.cudaenv');
    expect(existsSync(store)).toBe(false);
  });

  test('a directory that is not a store is left alone', () => {
    const other = join(dir, 'not-a-store');
    mkdirSync(join(other, 'precious'), {recursive: true});
    const r = runCli(['implode', '--yes'], {env: cliEnv(other)});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('does not look like a cudaenv store');
    expect(existsSync(join(other, 'precious'))).toBe(true);
  });
});
