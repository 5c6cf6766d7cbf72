/**
 * test/fixtures/apt-mirror.sh: the fetch scripts (test/fixtures/fetch-cuda-libs.sh,
 * bench/fetch-torch.sh) take the Debian mirror from this machine's apt sources, never from a host
 * named in the repository. Sample sources in temporary directories, in both of apt's formats; apt's
 * own reading of each sample (`apt-get indextargets`, offline) shows the entries it skips are real
 * entries, skipped on purpose, and that the one it picks is one apt uses.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {have, NEEDS} from './helpers/capabilities.js';
import {REPO_ROOT} from './helpers/cli.js';
import {testIf} from './helpers/skip.js';
import {makeTempDir, type TempDir} from './helpers/tmp.js';

const SCRIPT = join(REPO_ROOT, 'test', 'fixtures', 'apt-mirror.sh');
const HAVE_APT = have('apt-get');
const KEY = '/usr/share/keyrings/debian-archive-keyring.gpg';

let tmp: TempDir;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-apt-mirror-');
});
afterAll(() => tmp?.cleanup());

/** An apt configuration directory with these files (relative names: sources.list, sources.list.d/NAME). */
function etc(name: string, files: Record<string, string>): string {
  const dir = join(tmp.dir, name);
  mkdirSync(join(dir, 'sources.list.d'), {recursive: true});
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

/** `debian_mirror DIR` as the scripts call it: its output, status and error output. */
function mirror(dir: string, env: Record<string, string> = {}): {out: string; status: number | null; err: string} {
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', '. "$0" && debian_mirror "$1"', SCRIPT, dir], {encoding: 'utf8', env: {PATH: process.env.PATH ?? '/usr/bin:/bin', ...env}});
  return {out: r.stdout, status: r.status, err: r.stderr};
}

/** The repositories apt itself reads from DIR: "URI SUITE TYPE", in apt's order, without repeats. */
function aptView(dir: string): string[] {
  const lists = join(dir, 'lists');
  mkdirSync(lists, {recursive: true});
  const r = spawnSync('apt-get', ['-o', `Dir::Etc=${dir}`, '-o', `Dir::State::Lists=${lists}`, '-o', 'Dir::Etc::Parts=/dev/null',
    'indextargets', '--no-release-info', '--format', '$(REPO_URI) $(RELEASE) $(TARGET_OF)'], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`apt-get indextargets on ${dir} failed: ${r.stderr}`);
  return [...new Set(r.stdout.split('\n').filter(Boolean))];
}

const DEB822 = [
  '# Security first: not the main archive',
  'Types: deb',
  'URIs: http://security.mirror.invalid/archive-security',
  'Suites: bookworm-security',
  'Components: main',
  `Signed-By: ${KEY}`,
  '',
  '# Another vendor\'s repository for this release, signed by its own key',
  'Types: deb',
  'URIs: https://vendor.invalid/apt',
  'Suites: bookworm',
  'Components: main',
  'Signed-By: /usr/share/keyrings/vendor.gpg',
  '',
  'Types: deb',
  'URIs: http://disabled.invalid/archive',
  'Suites: bookworm',
  'Components: main',
  'Enabled: no',
  '',
  'Types: deb deb-src',
  '# a comment inside the stanza',
  'URIs: http://main.mirror.invalid/archive',
  'Suites: bookworm bookworm-updates',
  'Components: main',
  `Signed-By: ${KEY}`,
  '',
  'Types: deb',
  'URIs: http://second.mirror.invalid/archive',
  'Suites: trixie',
  'Components: main',
  '',
].join('\n');

const ONE_LINE = [
  '# deb http://commented.invalid/archive bookworm main',
  `deb [signed-by=${KEY}] http://security.mirror.invalid/archive-security bookworm-security main`,
  'deb [arch=amd64 signed-by=/etc/apt/keyrings/vendor.asc] https://vendor.invalid/apt bookworm main',
  'deb https://vendor.invalid/other cloud-sdk-bookworm main',
  '',
  `deb [ arch=amd64 signed-by=${KEY} ] http://main.mirror.invalid/archive bookworm main contrib # the main archive`,
  'deb http://second.mirror.invalid/archive bookworm-updates main',
  '',
].join('\n');

describe('debian_mirror reads the Debian mirror from apt\'s sources', () => {
  testIf(HAVE_APT, NEEDS.tool('apt-get', 'apt'))('deb822: the main archive\'s stanza, past the security archive, another vendor\'s key, a disabled stanza and comments', () => {
    const dir = etc('deb822', {'sources.list.d/debian.sources': DEB822});
    expect(mirror(dir)).toEqual({out: 'http://main.mirror.invalid/archive\n', status: 0, err: ''});
    // What was skipped is real to apt (so skipping it was a choice, not a misreading), and so is the answer.
    const apt = aptView(dir);
    expect(apt).toEqual(expect.arrayContaining([
      'http://security.mirror.invalid/archive-security/ bookworm-security deb',
      'https://vendor.invalid/apt/ bookworm deb',
      'http://main.mirror.invalid/archive/ bookworm deb',
      'http://main.mirror.invalid/archive/ bookworm deb-src',
    ]));
    expect(apt.some((l) => l.startsWith('http://disabled.invalid/'))).toBe(false);
  });

  testIf(HAVE_APT, NEEDS.tool('apt-get', 'apt'))('one-line format: options in brackets, comments, another vendor\'s key and suite skipped', () => {
    const dir = etc('one-line', {'sources.list': ONE_LINE});
    expect(mirror(dir)).toEqual({out: 'http://main.mirror.invalid/archive\n', status: 0, err: ''});
    const apt = aptView(dir);
    expect(apt).toEqual(expect.arrayContaining([
      'http://security.mirror.invalid/archive-security/ bookworm-security deb',
      'https://vendor.invalid/apt/ bookworm deb',
      'https://vendor.invalid/other/ cloud-sdk-bookworm deb',
      'http://main.mirror.invalid/archive/ bookworm deb',
    ]));
    expect(apt.some((l) => l.startsWith('http://commented.invalid/'))).toBe(false);
  });

  test('apt\'s order: sources.list first, then sources.list.d by name; names apt ignores are ignored', () => {
    const both = etc('order', {
      'sources.list': 'deb http://first.invalid/archive trixie main\n',
      'sources.list.d/a.sources': 'Types: deb\nURIs: http://parts-a.invalid/archive\nSuites: sid\nComponents: main\n',
    });
    expect(mirror(both).out).toBe('http://first.invalid/archive\n');
    const parts = etc('parts', {
      'sources.list.d/b.list': 'deb http://parts-b.invalid/archive bookworm main\n',
      'sources.list.d/a.sources': 'Types: deb\nURIs: http://parts-a.invalid/archive\nSuites: sid\nComponents: main',
      'sources.list.d/0.list.disabled': 'deb http://disabled.invalid/archive bookworm main\n',
      'sources.list.d/0.sources.save': 'Types: deb\nURIs: http://saved.invalid/archive\nSuites: bookworm\nComponents: main\n',
    });
    // a.sources ends without a newline or blank line: its stanza still counts.
    expect(mirror(parts).out).toBe('http://parts-a.invalid/archive\n');
  });

  test('CUDAENV_DEBIAN_MIRROR is the answer when set', () => {
    const dir = etc('override', {'sources.list': ONE_LINE});
    expect(mirror(dir, {CUDAENV_DEBIAN_MIRROR: 'http://127.0.0.1:9/debian'})).toEqual({out: 'http://127.0.0.1:9/debian\n', status: 0, err: ''});
  });

  test('no Debian archive among the sources (another distribution\'s, security only, none at all): status 1, nothing printed', () => {
    const other = etc('other', {
      'sources.list': 'deb http://ubuntu.mirror.invalid/other-archive noble main universe\n',
      'sources.list.d/security.sources': `Types: deb\nURIs: http://security.mirror.invalid/archive-security\nSuites: trixie-security\nComponents: main\nSigned-By: ${KEY}\n`,
    });
    expect(mirror(other)).toEqual({out: '', status: 1, err: ''});
    expect(mirror(etc('empty', {}))).toEqual({out: '', status: 1, err: ''});
    expect(mirror(join(tmp.dir, 'no-such-dir'))).toEqual({out: '', status: 1, err: ''});
  });

  testIf(HAVE_APT, NEEDS.tool('apt-get', 'apt'))('this machine\'s own sources: the answer is a Debian repository apt reads there, or none when apt has none', () => {
    const r = mirror('/etc/apt');
    const apt = spawnSync('apt-get', ['indextargets', '--no-release-info', '--format', '$(REPO_URI) $(RELEASE)'], {encoding: 'utf8'}).stdout.split('\n');
    const debian = apt.filter((l) => /^\S+ (bullseye|bookworm|trixie|forky|sid|stable|testing|unstable)(-updates|-backports)?$/.test(l));
    if (debian.length === 0) {
      expect(r).toEqual({out: '', status: 1, err: ''});
    } else {
      expect(r.status).toBe(0);
      expect(debian.map((l) => l.split(' ')[0])).toContain(r.out.trim().replace(/\/?$/, '/'));
    }
  });
});
