import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';

let dir: string;
let cleanup: () => void;
let store: string;
let env: NodeJS.ProcessEnv;
let proj: string;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
  store = join(dir, 'store');
  env = cliEnv(store);
  for (const v of ['11.8.0', '12.3.2', '12.4.1']) {
    expect(runCli(['add', makeFakeToolkit(join(dir, `cuda-${v}`), {version: v, programs: ['ptxas']})], {env}).status).toBe(0);
  }
  proj = join(dir, 'proj');
  mkdirSync(join(proj, 'src'), {recursive: true});
});
afterEach(() => cleanup());

describe('global, local, current, which', () => {
  test('current follows the precedence and names its origin', () => {
    let r = runCli(['current'], {env, cwd: proj});
    expect(r.stdout).toBe('system (no version selected)\n');
    expect(runCli(['global', '11'], {env}).stdout).toBe('Global default: 11 (11.8.0)\n');
    r = runCli(['current'], {env, cwd: proj});
    expect(r.stdout).toBe(`11.8.0 (set by the global default ${join(store, 'global')})\n`);
    expect(runCli(['local', '12.3'], {env, cwd: proj}).stdout).toBe(`Wrote ${join(proj, '.cuda-version')}: 12.3\n`);
    expect(readFileSync(join(proj, '.cuda-version'), 'utf8')).toBe('12.3\n');
    r = runCli(['current'], {env, cwd: join(proj, 'src')});
    expect(r.stdout).toBe(`12.3.2 (set by ${join(proj, '.cuda-version')})\n`);
    r = runCli(['current', '--json'], {env: {...env, CUDAENV_VERSION: '12'}, cwd: join(proj, 'src')});
    expect(JSON.parse(r.stdout)).toMatchObject({version: '12.4.1', spec: '12', origin: {kind: 'env'}, installed: true, path: join(store, 'versions', '12.4.1')});
  });

  test('the fast path and the oclif command print the same', () => {
    writeFileSync(join(proj, '.cuda-version'), '12\n');
    const fast = runCli(['current'], {env, cwd: proj});
    // An extra flag takes the oclif route; --json must agree with it too.
    const viaOclif = runCli(['current', '--json', '--json'], {env, cwd: proj});
    const fastJson = runCli(['current', '--json'], {env, cwd: proj});
    expect(fast.stdout).toBe(`12.4.1 (set by ${join(proj, '.cuda-version')})\n`);
    expect(JSON.parse(viaOclif.stdout)).toEqual(JSON.parse(fastJson.stdout));
  });

  test('a version that is not installed: exit 1 with the install command', () => {
    writeFileSync(join(proj, '.cuda-version'), '12.9\n');
    const r = runCli(['current'], {env, cwd: proj});
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`cudaenv: 12.9 (set by ${join(proj, '.cuda-version')}) is not installed\nInstall it with \`cudaenv install 12.9\`, or choose another version with \`cudaenv use\`.\n`);
  });

  test('an invalid .cuda-version gives one line naming it, and executes nothing', () => {
    writeFileSync(join(proj, '.cuda-version'), `$(touch ${join(dir, 'pwned')})\n`);
    const r = runCli(['current'], {env, cwd: proj});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cudaenv: ${join(proj, '.cuda-version')}: line 1 "$(touch`);
    expect(() => readFileSync(join(dir, 'pwned'))).toThrow();
  });

  test('which prints the program of the active version', () => {
    writeFileSync(join(proj, '.cuda-version'), '11.8\n');
    expect(runCli(['which', 'ptxas'], {env, cwd: proj}).stdout).toBe(`${join(store, 'versions', '11.8.0', 'bin', 'ptxas')}\n`);
    const missing = runCli(['which', 'ncu'], {env, cwd: proj});
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(`CUDA 11.8.0 has no program ncu (looked for ${join(store, 'versions', '11.8.0', 'bin', 'ncu')})`);
    expect(runCli(['which', '../../bin/sh'], {env, cwd: proj}).status).toBe(2);
  });

  test('aliases: alias, use through current, unalias', () => {
    expect(runCli(['alias', 'stable', '12.3'], {env}).stdout).toBe('stable -> 12.3 (now 12.3.2)\n');
    writeFileSync(join(proj, '.cuda-version'), 'stable\n');
    expect(runCli(['current'], {env, cwd: proj}).stdout).toBe(`12.3.2 (set by ${join(proj, '.cuda-version')}, alias stable)\n`);
    expect(runCli(['alias', 'latest', '12'], {env}).status).toBe(2);
    expect(runCli(['unalias', 'stable'], {env}).status).toBe(0);
    expect(runCli(['unalias', 'stable'], {env}).status).toBe(1);
  });

  test('bad usage exits 2', () => {
    expect(runCli(['global', 'not a spec'], {env}).status).toBe(2);
    expect(runCli(['ls', '--bogus'], {env}).status).toBe(2);
    expect(runCli(['local'], {env, cwd: proj}).status).toBe(2);
  });
});
