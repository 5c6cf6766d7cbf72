/**
 * Issue 45: site stores beneath the user's store. The site store is built by its administrator
 * (CUDAENV_DIR pointing at it, as the docs say) and reached by the user's cudaenv through
 * CUDAENV_SITE_DIRS or the machine-wide list file; it is only read, never written or locked
 * (a read-only bind mount in a mount namespace proves it), and a site store that is missing,
 * a file, not a store or hanging gives one line while the user's store goes on working.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {execFileSync} from 'node:child_process';
import {existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {CLI, cliEnv, runCli} from '../helpers/cli.js';
import {CAN_MOUNT_NAMESPACE} from '../helpers/capabilities.js';
import {describeIf, testIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {makeCondaPrefix} from '../core/conda/fixtures-env.js';
import {FAKE_CONDA} from '../core/conda/conda-sim.js';
import {probeNamespaces} from '../../src/core/link/isolate.js';
import {IS_ROOT, NEEDS} from '../helpers/capabilities.js';
import {canDropToNobody} from '../helpers/nobody.js';

let tmp: {dir: string; cleanup: () => void};
let n = 0;
beforeAll(() => {
  tmp = makeTempDir('cudaenv-site-');
});
afterAll(() => tmp.cleanup());

/** A site store as its administrator makes it (versions, a global default, an alias), and a user's store with their own version. */
function scenario(siteLabels = ['11.8.0', '12.4.1'], userLabels = ['12.2.2']) {
  const dir = join(tmp.dir, `s${++n}`);
  const site = join(dir, 'site');
  const user = join(dir, 'user');
  const admin = cliEnv(site);
  for (const l of siteLabels) makeFakeToolkit(join(site, 'versions', l), {version: l, programs: ['ptxas']});
  expect(runCli(['rehash'], {env: admin}).status).toBe(0);
  expect(runCli(['global', '12'], {env: admin}).status).toBe(0);
  expect(runCli(['alias', 'stable', '11.8'], {env: admin}).status).toBe(0);
  for (const l of userLabels) makeFakeToolkit(join(user, 'versions', l), {version: l, programs: ['ptxas']});
  const env = cliEnv(user, {CUDAENV_SITE_DIRS: site});
  const cli = (args: string[], extra: NodeJS.ProcessEnv = {}, cwd = dir) => runCli(args, {env: {...env, ...extra}, cwd});
  return {dir, site, user, admin, env, cli};
}

function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d, {withFileTypes: true})) {
      const r = `${rel}${name.name}`;
      out.push(`${r}${name.isSymbolicLink() ? ` -> ${readlinkSync(join(d, name.name))}` : ''}`);
      if (name.isDirectory()) walk(join(d, name.name), `${r}/`);
    }
  };
  walk(dir, '');
  return out.sort();
}

describe('site stores beneath the user store', () => {
  test('a site version, alias and global default are usable as the user\'s; ls, ls --json, current and which say which store', () => {
    const s = scenario();
    const ls = s.cli(['ls']);
    expect(ls.status).toBe(0);
    expect(ls.stdout).toMatch(new RegExp(`11\\.8\\.0\\s+\\(site store ${s.site}\\)`));
    expect(ls.stdout).toMatch(/ 12\.2\.2\n/);
    expect(ls.stdout).toContain('alias stable -> 11.8 (site)');
    const json = JSON.parse(s.cli(['ls', '--json']).stdout);
    expect(json.versions.map((v: {version: string; store: string; site: boolean}) => [v.version, v.store, v.site])).toEqual([
      ['11.8.0', s.site, true], ['12.2.2', s.user, false], ['12.4.1', s.site, true],
    ]);
    expect(json.sites).toEqual([s.site]);
    // The site's global default `12`: the highest 12.x of both stores, the site's 12.4.1.
    const current = s.cli(['current']);
    expect(current.stdout.trim()).toBe(`12.4.1 (set by the global default ${join(s.site, 'global')}, from the site store ${s.site})`);
    expect(JSON.parse(s.cli(['current', '--json']).stdout).store).toBe(s.site);
    const which = s.cli(['which', 'nvcc', '--json']);
    expect(JSON.parse(which.stdout)).toMatchObject({version: '12.4.1', store: s.site, path: join(s.user, 'versions', '12.4.1', 'bin', 'nvcc')});
    // The site's alias, through the shims (plain shell, no Node.js) as through the CLI.
    const shim = spawnSync(join(s.user, 'shims', 'nvcc'), [], {env: {...s.env, CUDAENV_VERSION: 'stable'}, encoding: 'utf8'});
    expect(shim.stdout).toContain('nvcc 11.8.131');
    expect(s.cli(['exec', '--cuda', 'stable', '--', 'sh', '-c', 'echo $CUDA_HOME']).stdout.trim()).toBe(join(s.user, 'versions', '11.8.0'));
  });

  test('the user\'s own version, alias and global default win over the site\'s of the same name', () => {
    const s = scenario(['11.8.0', '12.4.1'], ['12.4.1']);
    expect(s.cli(['global', '12.4.1']).status).toBe(0);
    expect(s.cli(['alias', 'stable', '12.4']).status).toBe(0);
    const json = JSON.parse(s.cli(['ls', '--json']).stdout);
    expect(json.versions.find((v: {version: string}) => v.version === '12.4.1')).toMatchObject({store: s.user, site: false});
    expect(s.cli(['current']).stdout.trim()).toBe(`12.4.1 (set by the global default ${join(s.user, 'global')})`);
    expect(JSON.parse(s.cli(['current', '--json'], {CUDAENV_VERSION: 'stable'}).stdout)).toMatchObject({version: '12.4.1', store: s.user});
    // Once the user's own is gone, the site's of that label is there again.
    expect(s.cli(['uninstall', '12.4.1']).status).toBe(0);
    expect(JSON.parse(s.cli(['ls', '--json']).stdout).versions.find((v: {version: string}) => v.version === '12.4.1')).toMatchObject({store: s.site, site: true});
  });

  test('uninstall of a site version says it is the site\'s and what the administrator runs; the site store is untouched', () => {
    const s = scenario();
    const before = tree(s.site);
    const r = s.cli(['uninstall', '12.4.1']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain(`CUDA 12.4.1 is the site's: it comes from the site store ${s.site}`);
    expect(r.stderr).toContain(`CUDAENV_DIR=${s.site} cudaenv uninstall 12.4.1`);
    expect(tree(s.site)).toEqual(before);
  });

  test('a version the site adds or removes is seen at the next command', () => {
    const s = scenario();
    expect(s.cli(['ls']).stdout).not.toContain('13.0.0');
    makeFakeToolkit(join(s.site, 'tmp', 'stage-13'), {version: '13.0.0'});
    // The administrator's install ends with a rename into versions/: a user never sees half of it.
    execFileSync('mv', [join(s.site, 'tmp', 'stage-13'), join(s.site, 'versions', '13.0.0')]);
    expect(runCli(['rehash'], {env: s.admin}).status).toBe(0);
    expect(JSON.parse(s.cli(['current', '--json'], {CUDAENV_VERSION: 'latest'}).stdout)).toMatchObject({version: '13.0.0', store: s.site});
    rmSync(join(s.site, 'versions', '12.4.1'), {recursive: true});
    expect(runCli(['rehash'], {env: s.admin}).status).toBe(0);
    const ls = s.cli(['ls']);
    expect(ls.stdout).not.toContain('12.4.1');
    expect(existsSync(join(s.user, 'versions', '12.4.1'))).toBe(false);
    expect(readlinkSync(join(s.user, 'resolve', '12'))).toBe('../versions/12.2.2');
  });

  test.each([
    ['missing', (p: string) => p, 'does not exist'],
    ['a file', (p: string) => (writeFileSync(p, 'x\n'), p), 'is not a directory'],
    ['not a store', (p: string) => (mkdirSync(join(p, 'something'), {recursive: true}), p), 'is not a cudaenv store (it has no versions/ directory)'],
  ])('a site store that is %s: one line, and the user\'s store works', (_name, make, why) => {
    const s = scenario([], ['12.2.2']);
    const bad = make(join(s.dir, 'bad-site'));
    const r = s.cli(['current', '--json'], {CUDAENV_SITE_DIRS: bad, CUDAENV_VERSION: '12'});
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({version: '12.2.2', store: s.user});
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual([`cudaenv: warning: site store ${bad} (CUDAENV_SITE_DIRS) ${why}; it is skipped and your store ${s.user} is used alone: fix the mount or the path, or remove it from CUDAENV_SITE_DIRS`]);
  });

  test('a site store that does not answer (its generation file a FIFO nobody writes: the read blocks) costs the timeout, then one line', () => {
    const s = scenario();
    const hanging = join(s.dir, 'hanging');
    mkdirSync(join(hanging, 'versions'), {recursive: true});
    mkdirSync(join(hanging, 'switch'));
    execFileSync('mkfifo', [join(hanging, 'switch', 'generation')]);
    const t0 = Date.now();
    const r = s.cli(['current', '--json'], {CUDAENV_SITE_DIRS: `${hanging}:${s.site}`, CUDAENV_SITE_TIMEOUT_MS: '500', CUDAENV_VERSION: '12.2'});
    const took = Date.now() - t0;
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({version: '12.2.2', store: s.user});
    expect(r.stderr).toContain(`site store ${hanging} (CUDAENV_SITE_DIRS) did not answer within 500 ms`);
    expect(took).toBeLessThan(10_000);
  });

  test('the machine-wide list file: one store per line, comments skipped; CUDAENV_SITE_DIRS, when set, replaces it', () => {
    const s = scenario();
    const file = join(s.dir, 'site-dirs');
    writeFileSync(file, `# the site's toolkits\n${s.site}\n\n`);
    const {CUDAENV_SITE_DIRS: _unset, ...noEnv} = s.env;
    const viaFile = runCli(['ls', '--json'], {env: {...noEnv, CUDAENV_SITE_DIRS_FILE: file}});
    expect(JSON.parse(viaFile.stdout).sites).toEqual([s.site]);
    const replaced = runCli(['ls', '--json'], {env: {...noEnv, CUDAENV_SITE_DIRS_FILE: file, CUDAENV_SITE_DIRS: ''}});
    expect(JSON.parse(replaced.stdout).versions.map((v: {version: string}) => v.version)).toEqual(['12.2.2']);
  });

  testIf(CAN_MOUNT_NAMESPACE, 'needs root and unshare -m (a read-only bind mount)')('a read-only mount as the site store: no command fails, nothing is written or locked there', () => {
    const s = scenario();
    // `add` writes to the user's store (install does too, but needs a mirror).
    const other = makeFakeToolkit(join(s.dir, 'other-12.6'), {version: '12.6.0'});
    const before = tree(s.site);
    const script = `set -e
mount --bind "$SITE" "$SITE"
mount -o remount,ro,bind "$SITE"
touch "$SITE/probe" 2>/dev/null && { echo "the site store is writable"; exit 9; }
for cmd in "ls" "current" "which nvcc" "rehash" "add $OTHER" "use 11.8 --json" "doctor --json" "modulefiles"; do
  node "$CLI" $cmd > /dev/null 2> "$OUT.err" || { echo "FAILED: $cmd"; cat "$OUT.err"; exit 1; }
done
echo all-ok`;
    const r = spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script], {
      env: {...s.env, SITE: s.site, CLI, OTHER: other, OUT: join(s.dir, 'out'), PATH: `${process.env.PATH}`}, encoding: 'utf8', cwd: s.dir, timeout: 120_000,
    });
    expect(r.stdout.trim()).toBe('all-ok');
    expect(tree(s.site)).toEqual(before);
    expect(existsSync(join(s.site, 'locks')) ? readdirSync(join(s.site, 'locks')) : []).toEqual([]);
    // The user's modulefiles name the site's versions, where the user has none of their own.
    const mf = s.cli(['modulefiles', '--json']);
    expect(mf.status).toBe(0);
    expect(mf.stdout).toContain('12.4.1');
    expect(JSON.parse(s.cli(['ls', '--json']).stdout).versions.find((v: {version: string}) => v.version === '12.6.0')).toMatchObject({store: s.user, kind: 'registered'});
    expect(readFileSync(join(s.user, 'site', 'links'), 'utf8')).toContain(`12.4.1\t${join(s.site, 'versions', '12.4.1')}`);
  });
});

const LMOD_INIT = '/usr/share/lmod/lmod/init/bash';
const namespaces = probeNamespaces();

describe('site versions through everything that reads the user\'s store', () => {
  testIf(existsSync(LMOD_INIT), `needs Lmod: no ${LMOD_INIT} (apt-get install lmod)`)('Lmod with the site\'s and the user\'s modulefiles: the user\'s name the site\'s versions where the user has none, and win', () => {
    const s = scenario(['11.8.0', '12.4.1'], ['12.4.1']);
    const siteMf = join(s.dir, 'site-modulefiles');
    const userMf = join(s.dir, 'user-modulefiles');
    expect(runCli(['modulefiles', '--dir', siteMf], {env: s.admin}).status).toBe(0);
    const w = s.cli(['modulefiles', '--dir', userMf, '--json']);
    expect({status: w.status, stderr: w.stderr}).toEqual({status: 0, stderr: ''});
    // The site's 11.8.0 (the user has none of their own) and the user's own 12.4.1.
    expect(JSON.parse(w.stdout).written.map((x: {version: string}) => x.version)).toEqual(['11.8.0', '12.4.1']);
    expect(readFileSync(join(userMf, 'cuda', '11.8.0.lua'), 'utf8')).toContain(join(s.user, 'versions', '11.8.0'));
    // As a cluster's users have it: the site's modulefiles on MODULEPATH, the user's before them.
    const script = `. ${LMOD_INIT} >/dev/null 2>&1
module use ${JSON.stringify(siteMf)}; module use ${JSON.stringify(userMf)}
module -t avail cuda 2>&1
module load cuda/11.8.0 || echo LOAD-FAILED; echo "HOME=$CUDA_HOME"; nvcc
module load cuda/12.4.1 2>/dev/null || echo LOAD-FAILED; echo "HOME=$CUDA_HOME"; nvcc
module purge; echo "PURGED=\${CUDA_HOME-unset}"`;
    const r = spawnSync('bash', ['--norc', '--noprofile', '-c', script], {env: {...s.env, HOME: s.dir, PATH: '/usr/bin:/bin'}, encoding: 'utf8'});
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    // (Each directory also lists the modulefiles' short names, cuda/12(@cuda/12.4.1) and so on.)
    expect(lines.filter((l) => l.endsWith(':') || /^cuda\/[0-9.]+$/.test(l))).toEqual([
      `${userMf}:`, 'cuda/11.8.0', 'cuda/12.4.1', `${siteMf}:`, 'cuda/11.8.0', 'cuda/12.4.1',
    ]);
    expect(lines.slice(-5)).toEqual([
      `HOME=${join(s.user, 'versions', '11.8.0')}`, `nvcc 11.8.131 from ${join(s.user, 'versions', '11.8.0', 'bin', 'nvcc')} `,
      `HOME=${join(s.user, 'versions', '12.4.1')}`, `nvcc 12.4.131 from ${join(s.user, 'versions', '12.4.1', 'bin', 'nvcc')} `,
      'PURGED=unset',
    ]);
    // 11.8.0 is the site's toolkit, reached through the user's store; 12.4.1 the user's own.
    expect(readlinkSync(join(s.user, 'versions', '11.8.0'))).toBe(join(s.site, 'versions', '11.8.0'));
  });

  test('conda hooks: a hook installed for a site version activates it in a real shell and deactivates it', () => {
    const s = scenario();
    const prefix = makeCondaPrefix(join(s.dir, 'miniforge', 'envs', 'torch'), 'A');
    const home = join(s.dir, 'home');
    mkdirSync(home);
    const r = s.cli(['conda', 'hook', 'install', '11.8', '--json'], {CONDA_PREFIX: prefix, HOME: home, LD_LIBRARY_PATH: undefined});
    expect({status: r.status, stderr: r.stderr}).toEqual({status: 0, stderr: ''});
    expect(JSON.parse(r.stdout)).toMatchObject({version: '11.8.0', toolkit: join(s.user, 'versions', '11.8.0')});
    const script = `set -eu
conda() { _o=$("${process.execPath}" "${FAKE_CONDA}" posix "$@"); eval "$_o"; }
conda activate "${prefix}"
printf '%s\\n' "$CUDA_HOME" "$(nvcc)"
conda deactivate
printf '%s\\n' "\${CUDA_HOME-unset}"
`;
    const sh = spawnSync('bash', ['-c', script], {encoding: 'utf8', env: {PATH: process.env.PATH, HOME: home, CONDA_SHLVL: '0', TRACE_FILE: join(s.dir, 'trace')}});
    expect(sh.stderr).toBe('');
    const v = join(s.user, 'versions', '11.8.0');
    expect(sh.stdout.split('\n')).toEqual([v, `nvcc 11.8.131 from ${join(v, 'bin', 'nvcc')} `, 'unset', '']);
  });

  testIf(namespaces.ok, `${NEEDS.mountNamespace}: ${namespaces.ok ? '' : namespaces.reason}`)('exec --isolate: a site version at /usr/local/cuda inside, the machine\'s untouched', () => {
    const s = scenario();
    const show = 'sed -n "s/.*\\"version\\": *\\"\\([0-9.]*\\)\\".*/\\1/p" /usr/local/cuda/version.json | head -n 1; echo "$CUDA_HOME"; /usr/local/cuda/bin/nvcc';
    const was = spawnSync('sh', ['-c', 'ls -ldi /usr/local/cuda 2>&1'], {encoding: 'utf8'}).stdout;
    const r = s.cli(['exec', '--isolate', '--cuda', '11.8', '--', 'sh', '-c', show]);
    expect(r.stderr).toBe('');
    const v = join(s.user, 'versions', '11.8.0');
    expect(r.stdout).toBe(`11.8.0\n${v}\nnvcc 11.8.131 from /usr/local/cuda/bin/nvcc \n`);
    expect(spawnSync('sh', ['-c', 'ls -ldi /usr/local/cuda 2>&1'], {encoding: 'utf8'}).stdout).toBe(was);
  });

  testIf(IS_ROOT && canDropToNobody, 'needs root (link as root) and setpriv')('link as root: a site version under root\'s paths is linked; one whose tree is not root\'s alone is refused', () => {
    const s = scenario();
    const target = join(s.dir, 'local', 'cuda');
    mkdirSync(join(s.dir, 'local'));
    const r = s.cli(['link', '12.4.1', '--target', target, '--json']);
    expect({status: r.status, stderr: r.stderr}).toEqual({status: 0, stderr: ''});
    expect(JSON.parse(r.stdout)).toMatchObject({version: '12.4.1', target});
    // The target is the user's store's entry, which is the link into the site: root's rule (the
    // whole tree root's alone) is checked through it, on the site's toolkit.
    expect(readlinkSync(target)).toBe(join(s.user, 'versions', '12.4.1'));
    expect(execFileSync('sh', ['-c', `"${target}/bin/nvcc"`], {encoding: 'utf8'})).toContain('nvcc 12.4.131');
    expect(s.cli(['unlink', '--target', target]).status).toBe(0);
    // A site tree another user can change (the site's 11.8.0 given to nobody): root refuses it.
    execFileSync('chown', ['-R', '65534:65534', join(s.site, 'versions', '11.8.0')]);
    const refused = s.cli(['link', '11.8.0', '--target', target]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('refusing to link CUDA 11.8.0 as root: ');
    expect(refused.stderr).toContain('is not root\'s alone');
    expect(existsSync(target)).toBe(false);
  });
});
