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

  test('a directory that is not a store is left alone', () => {
    const other = join(dir, 'not-a-store');
    mkdirSync(join(other, 'precious'), {recursive: true});
    const r = runCli(['implode', '--yes'], {env: cliEnv(other)});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('does not look like a cudaenv store');
    expect(existsSync(join(other, 'precious'))).toBe(true);
  });
});
