import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeStore, openUp} from '../core/link/fixtures.js';
import {canDropToNobody, runCliAsNobody} from '../helpers/nobody.js';
import {storeRoot} from '../../src/core/store/paths.js';
import {describeIf, testIf} from '../helpers/skip.js';
import {IS_ROOT, NEEDS} from '../helpers/capabilities.js';

let dir: string;
let cleanup: () => void;
let store: string;
let env: NodeJS.ProcessEnv;
let target: string;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
  store = join(dir, 'store');
  makeStore(store, ['12.2.0', '12.4.1']);
  env = cliEnv(store, {HOME: dir});
  mkdirSync(join(dir, 'local'));
  target = join(dir, 'local', 'cuda');
});
afterEach(() => cleanup());

describe('cudaenv link / unlink', () => {
  test('without SPEC it links what .cuda-version selects for the current directory', () => {
    const project = join(dir, 'project', 'src');
    mkdirSync(project, {recursive: true});
    writeFileSync(join(dir, 'project', '.cuda-version'), '12.2\n');
    symlinkSync('/opt/elsewhere', target);
    const r = runCli(['link', '--target', target, '--json'], {env, cwd: project});
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({target, version: '12.2.0', path: join(store, 'versions', '12.2.0'), mode: 'symlink', changed: true, dryRun: false, before: 'a link to /opt/elsewhere', restores: 'a link to /opt/elsewhere'});
    expect(readlinkSync(target)).toBe(join(store, 'versions', '12.2.0'));
    const human = runCli(['link', '12.4', '--target', target], {env});
    expect(human.stdout).toContain(`${target} -> ${join(store, 'versions', '12.4.1')} (CUDA 12.4.1; was a link to ${join(store, 'versions', '12.2.0')})`);
    expect(human.stdout).toContain(`\`cudaenv unlink --target ${target}\` restores a link to /opt/elsewhere.`);
    const u = runCli(['unlink', '--target', target], {env});
    expect(u.stdout).toBe(`${target}: restored a link to /opt/elsewhere (was a link to ${join(store, 'versions', '12.4.1')})\n`);
    expect(readlinkSync(target)).toBe('/opt/elsewhere');
    // A relative --target with a blank: the unlink command printed works from anywhere.
    const spaced = join(dir, 'local', 'my cuda');
    const rel = runCli(['link', '12.4', '--target', 'local/my cuda'], {env, cwd: dir});
    expect(rel.status).toBe(0);
    expect(rel.stdout).toContain(`\`cudaenv unlink --target '${spaced}'\` restores nothing (the link is removed).`);
    expect(runCli(['unlink', '--target', spaced], {env}).status).toBe(0);
    expect(existsSync(spaced)).toBe(false);
  });

  testIf(spawnSync('update-alternatives', ['--version']).status === 0, 'needs update-alternatives (apt-get install dpkg)')('a target managed by update-alternatives, through the CUDAENV_ALTDIR/ADMINDIR/ALTLOG knobs', () => {
    const knobs = {CUDAENV_ALTDIR: join(dir, 'alt'), CUDAENV_ADMINDIR: join(dir, 'adm'), CUDAENV_ALTLOG: join(dir, 'alt.log')};
    mkdirSync(knobs.CUDAENV_ALTDIR);
    mkdirSync(knobs.CUDAENV_ADMINDIR);
    mkdirSync(join(dir, 'local', 'cuda-12.6'));
    const ua = (...args: string[]) => spawnSync('update-alternatives', ['--altdir', knobs.CUDAENV_ALTDIR, '--admindir', knobs.CUDAENV_ADMINDIR, '--log', knobs.CUDAENV_ALTLOG, ...args], {encoding: 'utf8'});
    expect(ua('--install', target, 'cuda', join(dir, 'local', 'cuda-12.6'), '126').status).toBe(0);
    const r = runCli(['link', '12.4', '--target', target], {env: {...env, ...knobs}});
    expect(r.stdout).toContain(`${target} -> ${join(store, 'versions', '12.4.1')} (CUDA 12.4.1, via update-alternatives: cuda in manual mode; was a link to ${join(dir, 'alt', 'cuda')})`);
    expect(ua('--query', 'cuda').stdout).toContain(`Status: manual\nBest: ${join(dir, 'local', 'cuda-12.6')}\nValue: ${join(store, 'versions', '12.4.1')}`);
    const u = runCli(['unlink', '--target', target], {env: {...env, ...knobs}});
    expect(u.stdout).toBe(`${target}: restored cuda in auto mode (was a link to ${join(dir, 'alt', 'cuda')})\nremoved the alternative ${join(store, 'versions', '12.4.1')} from cuda\n`);
    expect(ua('--query', 'cuda').stdout).toContain(`Status: auto\nBest: ${join(dir, 'local', 'cuda-12.6')}\nValue: ${join(dir, 'local', 'cuda-12.6')}`);
    expect(readFileSync(knobs.CUDAENV_ALTLOG, 'utf8')).toContain('--set cuda');
  });

  testIf(spawnSync('python3', ['--version']).status === 0, 'needs python3 (the stand-in for Red Hat\'s alternatives)')('a target managed by Red Hat\'s alternatives (RHEL, Rocky, Alma, Fedora: no --query, no --log)', () => {
    // test/fixtures/rhel-alternatives.py reproduces chkconfig's alternatives.c, first on PATH as update-alternatives.
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    symlinkSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'rhel-alternatives.py'), join(bin, 'update-alternatives'));
    // CUDAENV_ALTLOG as a dpkg user might have it set: Red Hat's tool has no --log, and cudaenv leaves it out.
    const knobs = {CUDAENV_ALTDIR: join(dir, 'alt'), CUDAENV_ADMINDIR: join(dir, 'adm'), CUDAENV_ALTLOG: join(dir, 'alt.log'), PATH: `${bin}:${env.PATH ?? '/usr/bin:/bin'}`};
    mkdirSync(knobs.CUDAENV_ALTDIR);
    mkdirSync(knobs.CUDAENV_ADMINDIR);
    mkdirSync(join(dir, 'local', 'cuda-12.6'));
    const ua = (...args: string[]) => spawnSync('update-alternatives', ['--altdir', knobs.CUDAENV_ALTDIR, '--admindir', knobs.CUDAENV_ADMINDIR, ...args], {encoding: 'utf8', env: {...process.env, PATH: knobs.PATH}});
    expect(ua('--install', target, 'cuda', join(dir, 'local', 'cuda-12.6'), '126').status).toBe(0);
    const r = runCli(['link', '12.4', '--target', target], {env: {...env, ...knobs}});
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toContain(`${target} -> ${join(store, 'versions', '12.4.1')} (CUDA 12.4.1, via update-alternatives: cuda in manual mode; was a link to ${join(dir, 'alt', 'cuda')})`);
    expect(ua('--display', 'cuda').stdout).toBe(`cuda - status is manual.\n link currently points to ${join(store, 'versions', '12.4.1')}\n` +
      `${join(dir, 'local', 'cuda-12.6')} - priority 126\n${join(store, 'versions', '12.4.1')} - priority 0\nCurrent \`best' version is ${join(dir, 'local', 'cuda-12.6')}.\n`);
    expect(readlinkSync(target)).toBe(join(dir, 'alt', 'cuda'));
    const u = runCli(['unlink', '--target', target], {env: {...env, ...knobs}});
    expect(u.stdout).toBe(`${target}: restored cuda in auto mode (was a link to ${join(dir, 'alt', 'cuda')})\nremoved the alternative ${join(store, 'versions', '12.4.1')} from cuda\n`);
    expect(ua('--display', 'cuda').stdout).toBe(`cuda - status is auto.\n link currently points to ${join(dir, 'local', 'cuda-12.6')}\n` +
      `${join(dir, 'local', 'cuda-12.6')} - priority 126\nCurrent \`best' version is ${join(dir, 'local', 'cuda-12.6')}.\n`);
    expect(existsSync(knobs.CUDAENV_ALTLOG)).toBe(false);
  });

  test('bad input: system, a version not installed, a directory target', () => {
    expect(runCli(['link', 'system', '--target', target], {env}).status).toBe(2);
    const missing = runCli(['link', '11.8', '--target', target], {env});
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('CUDA 11.8 is not installed');
    mkdirSync(target);
    const refused = runCli(['link', '12.4', '--target', target, '--json'], {env});
    expect(refused.status).toBe(1);
    expect(JSON.parse(refused.stdout).error.code).toBe('target-not-link');
  });

  testIf(IS_ROOT, NEEDS.root)('under sudo the store is SUDO_USER\'s, not root\'s (unless CUDAENV_DIR is set)', () => {
    // nobody's home in /etc/passwd is /nonexistent: its store holds nothing.
    expect(storeRoot({SUDO_USER: 'nobody', HOME: '/root'})).toBe('/nonexistent/.cudaenv');
    expect(storeRoot({SUDO_USER: 'nobody', HOME: '/root', CUDAENV_DIR: store})).toBe(store);
    const homeStore = join(dir, '.cudaenv');
    makeStore(homeStore, ['12.4.1']);
    const plain = {...cliEnv(store, {HOME: dir}), CUDAENV_DIR: ''};
    expect(runCli(['link', '12.4', '--target', target, '--dry-run'], {env: plain}).status).toBe(0);
    const sudo = runCli(['link', '12.4', '--target', target, '--dry-run'], {env: {...plain, SUDO_USER: 'nobody'}});
    expect(sudo.status).toBe(1);
    expect(sudo.stderr).toContain('CUDA 12.4 is not installed');
  });
});

const describeNobody = describeIf(canDropToNobody, 'needs root and setpriv (util-linux) to run as nobody');

describeNobody('as an ordinary user', () => {
  beforeEach(() => openUp(dir));

  test('permission denied names the exact sudo command, keeping CUDAENV_DIR', () => {
    symlinkSync('/opt/elsewhere', target);
    const r = runCliAsNobody(['link', '12.4', '--target', target], env);
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`cudaenv: permission denied: cannot change ${target}\nRun it as root: sudo CUDAENV_DIR=${store} cudaenv link 12.4 --target ${target}\n`);
    expect(readlinkSync(target)).toBe('/opt/elsewhere');
    const u = runCliAsNobody(['unlink', '--target', target, '--json'], env);
    expect(JSON.parse(u.stdout).error.code).toBe('not-linked');
  });

  test('a store the user cannot write is refused before the target changes', () => {
    chmodSync(join(dir, 'local'), 0o777);
    symlinkSync('/opt/elsewhere', target);
    const r = runCliAsNobody(['link', '12.4', '--target', target, '--json'], env);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).error).toMatchObject({code: 'store-not-writable', message: expect.stringContaining(`cannot record what ${target} was before linking, in ${join(store, 'links')}`)});
    expect(readlinkSync(target)).toBe('/opt/elsewhere');
  });

  test('a stale loader cache is reported with the command to run', () => {
    chmodSync(join(dir, 'local'), 0o777);
    for (const d of [store, join(store, 'versions')]) chownSync(d, 65534, 65534);
    writeFileSync(join(dir, 'ld.so.conf'), `${target}/lib64\n`);
    const r = runCliAsNobody(['link', '12.4', '--target', target], {...env, CUDAENV_LDSO_CONF: join(dir, 'ld.so.conf'), CUDAENV_LDSO_CACHE: join(dir, 'cache')});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`the loader cache is stale (${join(dir, 'ld.so.conf')} names ${target}): run \`sudo ldconfig -C ${join(dir, 'cache')} -f ${join(dir, 'ld.so.conf')}\``);
    expect(readlinkSync(target)).toBe(join(store, 'versions', '12.4.1'));
  });
});
