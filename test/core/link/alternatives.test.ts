import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, readFileSync, readlinkSync, realpathSync, symlinkSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {makeTempDir} from '../../helpers/tmp.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {linkVersion, unlinkTarget, type LinkContext} from '../../../src/core/link/index.js';
import {altArgv, altFlavour, parseQuery, queryGroup, type AltOptions} from '../../../src/core/link/alternatives.js';
import {makeStore} from './fixtures.js';
import {describeIf} from '../../helpers/skip.js';

const available = spawnSync('update-alternatives', ['--version']).status === 0;
const describeAlt = describeIf(available, 'needs update-alternatives (apt-get install dpkg)');
const HAVE_PYTHON = spawnSync('python3', ['--version']).status === 0;
/**
 * Red Hat's alternatives (RHEL, Rocky, Alma, Fedora: no --query, its own state files), which cannot be
 * installed here: test/fixtures/rhel-alternatives.py reproduces it, put first on PATH as update-alternatives.
 */
const describeRedHat = describeIf(HAVE_PYTHON, 'needs python3 (the stand-in for Red Hat\'s alternatives)');
const STAND_IN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'rhel-alternatives.py');

let dir: string;
let cleanup: () => void;
let ctx: LinkContext;
let alt: AltOptions;
let local: string;
const v = (label: string) => join(dir, 'store', 'versions', label);

/** What NVIDIA's cuda-toolkit packages run in their postinst (priorities as they use them). */
function ua(...args: string[]): string {
  const argv = altArgv(alt, args);
  const r = spawnSync(argv[0], argv.slice(1), {encoding: 'utf8', env: process.env});
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout;
}

function setUp(): void {
  ({dir, cleanup} = makeTempDir());
  local = join(dir, 'local');
  for (const d of ['alt', 'adm', 'local']) mkdirSync(join(dir, d));
  alt = {altdir: join(dir, 'alt'), admindir: join(dir, 'adm'), log: join(dir, 'alt.log')};
  ctx = {paths: makeStore(join(dir, 'store'), ['12.4.1', '13.0.0']), alt, ld: {conf: join(dir, 'none.conf')}, argv: ['link'], env: {CUDAENV_STATE_DIR: join(dir, 'root-state'), CUDAENV_LINK_PREFIXES: dir}};
  for (const [ver, prio] of [['12.2', '122'], ['12.6', '126']]) {
    makeFakeToolkit(join(local, `cuda-${ver}`), {version: `${ver}.0`});
    ua('--install', join(local, 'cuda'), 'cuda', join(local, `cuda-${ver}`), prio);
    ua('--install', join(local, 'cuda-12'), 'cuda-12', join(local, `cuda-${ver}`), prio);
  }
}

describeAlt('a target managed by update-alternatives (real update-alternatives, private altdir/admindir)', () => {
  beforeEach(() => setUp());
  afterEach(() => cleanup());
  test('it is dpkg\'s', () => expect(altFlavour(alt)).toBe('dpkg'));
  linkTests();
});

describeRedHat('a target managed by Red Hat\'s alternatives (RHEL, Rocky, Alma, Fedora; a stand-in, private altdir/admindir)', () => {
  const savedPath = process.env.PATH;
  let bin: {dir: string; cleanup: () => void};
  beforeEach(() => {
    bin = makeTempDir();
    symlinkSync(STAND_IN, join(bin.dir, 'update-alternatives'));
    process.env.PATH = `${bin.dir}:${savedPath ?? '/usr/bin:/bin'}`;
    setUp();
  });
  afterEach(() => {
    process.env.PATH = savedPath;
    cleanup();
    bin.cleanup();
  });
  test('it is told apart from dpkg\'s, has no --query, and keeps its state in its own format', () => {
    expect(altFlavour(alt)).toBe('chkconfig');
    const query = spawnSync('update-alternatives', ['--admindir', alt.admindir!, '--altdir', alt.altdir, '--query', 'cuda'], {encoding: 'utf8', env: process.env});
    expect([query.status, query.stdout.split('\n')[0]]).toEqual([2, 'alternatives version 1.24 - Copyright (C) 2001 Red Hat, Inc.']);
    expect(readFileSync(join(alt.admindir!, 'cuda'), 'utf8')).toBe(`auto\n${join(local, 'cuda')}\n\n${join(local, 'cuda-12.2')}\n122\n${join(local, 'cuda-12.6')}\n126\n`);
    expect(queryGroup(alt, 'cuda')).toEqual({name: 'cuda', link: join(local, 'cuda'), status: 'auto', value: join(local, 'cuda-12.6'), alternatives: [
      {path: join(local, 'cuda-12.2'), priority: 122}, {path: join(local, 'cuda-12.6'), priority: 126},
    ]});
    expect(queryGroup(alt, 'cuda-13')).toBeUndefined();
    // An auto group whose link someone moved by hand reads as manual, as that tool reads it.
    ua('--set', 'cuda', join(local, 'cuda-12.2'));
    ua('--auto', 'cuda');
    spawnSync('ln', ['-sfn', join(local, 'cuda-12.2'), join(alt.altdir, 'cuda')], {env: process.env});
    expect(queryGroup(alt, 'cuda')).toMatchObject({status: 'manual', value: join(local, 'cuda-12.2')});
  });
  linkTests();
});

function linkTests(): void {
  test('link registers and selects the version in cuda and cuda-<major>; upgrades do not move it; unlink restores auto mode', async () => {
    const target = join(local, 'cuda');
    expect(readlinkSync(target)).toBe(join(dir, 'alt', 'cuda'));
    const r = await linkVersion(ctx, target, '12.4.1', false);
    expect(r.mode).toBe('alternatives');
    expect(r.alternatives).toEqual([
      {group: 'cuda', link: target, added: true},
      {group: 'cuda-12', link: join(local, 'cuda-12'), added: true},
    ]);
    expect(readlinkSync(target)).toBe(join(dir, 'alt', 'cuda')); // the package's link is left as it is
    expect(realpathSync(target)).toBe(v('12.4.1'));
    expect(realpathSync(join(local, 'cuda-12'))).toBe(v('12.4.1'));
    expect(queryGroup(alt, 'cuda')).toMatchObject({status: 'manual', value: v('12.4.1')});

    // A newer package arrives: in manual mode the link stays where cudaenv put it.
    makeFakeToolkit(join(local, 'cuda-12.8'), {version: '12.8.0'});
    ua('--install', target, 'cuda', join(local, 'cuda-12.8'), '128');
    expect(realpathSync(target)).toBe(v('12.4.1'));

    const u = unlinkTarget(ctx, target);
    expect(u.restored).toBe('cuda in auto mode, cuda-12 in auto mode');
    expect(u.removedAlternatives).toEqual(expect.arrayContaining([{group: 'cuda', path: v('12.4.1')}, {group: 'cuda-12', path: v('12.4.1')}]));
    const cuda = queryGroup(alt, 'cuda')!;
    expect(cuda).toMatchObject({status: 'auto', value: join(local, 'cuda-12.8')});
    expect(cuda.alternatives.map((a) => a.path)).not.toContain(v('12.4.1'));
    expect(queryGroup(alt, 'cuda-12')).toMatchObject({status: 'auto', value: join(local, 'cuda-12.6')});
  });

  test('a group in manual mode gets its manual choice back; links of several versions are all undone', async () => {
    const target = join(local, 'cuda');
    ua('--set', 'cuda', join(local, 'cuda-12.2'));
    await linkVersion(ctx, target, '12.4.1', false);
    await linkVersion(ctx, target, '13.0.0', false); // no cuda-13 group: only cuda moves
    expect(realpathSync(target)).toBe(v('13.0.0'));
    await linkVersion(ctx, target, '12.4.1', false);
    expect(realpathSync(target)).toBe(v('12.4.1'));
    unlinkTarget(ctx, target);
    expect(queryGroup(alt, 'cuda')).toMatchObject({status: 'manual', value: join(local, 'cuda-12.2')});
    const paths = queryGroup(alt, 'cuda')!.alternatives.map((a) => a.path);
    expect(paths).not.toContain(v('12.4.1'));
    expect(paths).not.toContain(v('13.0.0'));
    expect(queryGroup(alt, 'cuda-12')).toMatchObject({status: 'auto', value: join(local, 'cuda-12.6')});
  });

  test('an alternative the packages already provide is selected, and kept on unlink', async () => {
    const target = join(local, 'cuda');
    mkdirSync(join(dir, 'store', 'versions'), {recursive: true});
    spawnSync('ln', ['-s', join(local, 'cuda-12.2'), v('12.2.0')]);
    const r = await linkVersion(ctx, target, '12.2.0', false);
    expect(r.alternatives.map((a) => a.added)).toEqual([false, false]);
    expect(queryGroup(alt, 'cuda')).toMatchObject({status: 'manual', value: join(local, 'cuda-12.2')});
    unlinkTarget(ctx, target);
    expect(queryGroup(alt, 'cuda')).toMatchObject({status: 'auto', value: join(local, 'cuda-12.6')});
    expect(queryGroup(alt, 'cuda')!.alternatives.map((a) => a.path)).toContain(join(local, 'cuda-12.2'));
  });

  test('--dry-run says what it would do and changes nothing', async () => {
    const r = await linkVersion(ctx, join(local, 'cuda'), '12.4.1', true);
    expect(r.actions).toEqual([
      `register ${v('12.4.1')} as an alternative of cuda`, `select ${v('12.4.1')} for cuda (manual mode)`,
      `register ${v('12.4.1')} as an alternative of cuda-12`, `select ${v('12.4.1')} for cuda-12 (manual mode)`,
    ]);
    expect(queryGroup(alt, 'cuda')).toMatchObject({status: 'auto', value: join(local, 'cuda-12.6')});
  });
}

test('parseQuery reads update-alternatives --query output', () => {
  const g = parseQuery('Name: cuda\nLink: /usr/local/cuda\nStatus: manual\nBest: /usr/local/cuda-12.6\nValue: /opt/x\n\nAlternative: /usr/local/cuda-12.6\nPriority: 126\n\nAlternative: /opt/x\nPriority: 0\n');
  expect(g).toEqual({name: 'cuda', link: '/usr/local/cuda', status: 'manual', value: '/opt/x', alternatives: [{path: '/usr/local/cuda-12.6', priority: 126}, {path: '/opt/x', priority: 0}]});
  expect(parseQuery('Name: cuda\nLink: /usr/local/cuda\nStatus: auto\nBest: none\nValue: none\n').value).toBeNull();
});
