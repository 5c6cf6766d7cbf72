import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, readdirSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {describeIf, testIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {CAN_HIDE_NODE, DIST_EXE, HAVE_EXE, HOST_ARCH, NEEDS_EXE, NEEDS_HIDE_NODE, WITHOUT_NODE} from './exe.js';

/**
 * The Python wheels (scripts/build-wheel.py, issue 34): only the executable and its metadata,
 * installed offline by pip into a fresh venv and by Debian's pipx, then run with node hidden.
 */

const version = (JSON.parse(spawnSync('cat', [join(REPO_ROOT, 'package.json')], {encoding: 'utf8'}).stdout) as {version: string}).version;
const MACHINE = {x64: 'x86_64', arm64: 'aarch64'} as const;
const wheelOf = (arch: 'x64' | 'arm64') => join(DIST_EXE, `cudaenv-${version}-py3-none-manylinux_2_28_${MACHINE[arch]}.whl`);
const WHEEL = wheelOf(HOST_ARCH);
const HAVE_WHEEL = HAVE_EXE && existsSync(WHEEL);
const WHY = HAVE_EXE ? `needs ${WHEEL} (npm run build:exe)` : NEEDS_EXE;
const PYTHON_VENV = spawnSync('python3', ['-c', 'import venv, ensurepip'], {stdio: 'ignore'}).status === 0;
const PIPX = existsSync('/usr/bin/pipx');

let tmp: {dir: string; cleanup: () => void};
beforeAll(() => {
  tmp = makeTempDir('cudaenv-wheel-');
});
afterAll(() => tmp?.cleanup());

/** The wheel's members with their mode, and whether RECORD's hashes and sizes hold. */
function inspect(wheel: string): {members: Record<string, string>; record: string} {
  const py = `
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for i in z.infolist(): print('member', i.filename, oct((i.external_attr >> 16) & 0o777))
rec = [n for n in z.namelist() if n.endswith('.dist-info/RECORD')][0]
ok = True
for line in z.read(rec).decode().splitlines():
    path, h, size = line.rsplit(',', 2)
    if path == rec: continue
    data = z.read(path)
    ok = ok and h == 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode() and int(size) == len(data)
print('record', 'ok' if ok else 'bad')
`;
  const r = spawnSync('python3', ['-c', py, wheel], {encoding: 'utf8'});
  const members: Record<string, string> = {};
  let record = '';
  for (const line of r.stdout.trim().split('\n')) {
    const [kind, a, b] = line.split(' ');
    if (kind === 'member') members[a!] = b!;
    else record = a!;
  }
  return {members, record};
}

describeIf(HAVE_WHEEL, WHY)('the wheels', () => {
  test.each(['x64', 'arm64'] as const)('the %s wheel holds the executable (mode 755) and its metadata, nothing else; RECORD holds', (arch) => {
    const {members, record} = inspect(wheelOf(arch));
    expect(members).toEqual({
      [`cudaenv-${version}.data/scripts/cudaenv`]: '0o755',
      [`cudaenv-${version}.dist-info/METADATA`]: '0o644',
      [`cudaenv-${version}.dist-info/WHEEL`]: '0o644',
      [`cudaenv-${version}.dist-info/RECORD`]: '0o644',
    });
    expect(record).toBe('ok');
  });

  testIf(PYTHON_VENV && CAN_HIDE_NODE, PYTHON_VENV ? NEEDS_HIDE_NODE : 'needs python3 with venv and ensurepip')('pip install --no-index into a fresh venv puts cudaenv on its bin/, which runs with node hidden; self-update names pip', () => {
    const venv = join(tmp.dir, 'venv');
    expect(spawnSync('python3', ['-m', 'venv', venv], {stdio: 'ignore'}).status).toBe(0);
    const pip = spawnSync(join(venv, 'bin', 'pip'), ['install', '--no-index', '--disable-pip-version-check', WHEEL], {encoding: 'utf8'});
    expect(pip.status).toBe(0);
    // `uv tool install` (not on this machine) finds a wheel's executables that are no Python entry points,
    // as ruff's and this one's are, in the installed RECORD, the only trace of .data/scripts after the install
    // (astral-sh/uv#4693): the installed RECORD lists bin/cudaenv.
    const lib = join(venv, 'lib');
    const siteDir = join(lib, readdirSync(lib).find((d) => d.startsWith('python3'))!, 'site-packages');
    const record = readFileSync(join(siteDir, `cudaenv-${version}.dist-info`, 'RECORD'), 'utf8');
    expect(record).toMatch(/^\.\.\/\.\.\/\.\.\/bin\/cudaenv,sha256=[\w-]+,\d+$/m);
    const env = {PATH: `${join(venv, 'bin')}:/usr/bin:/bin`, HOME: tmp.dir, CUDAENV_DIR: join(tmp.dir, 'store')};
    const r = spawnSync(WITHOUT_NODE, ['sh', '-c', 'command -v cudaenv; cudaenv --version; cudaenv self-update; echo "rc=$?"'], {env, encoding: 'utf8'});
    expect(r.stdout).toMatch(new RegExp(`^${join(venv, 'bin', 'cudaenv')}\\ncudaenv/${version} linux-`));
    expect(r.stdout).toContain('rc=2');
    expect(r.stderr).toContain('installed as a Python package');
    // Never `pip install --upgrade cudaenv`: that name on the Python package index is not this project's (issue 44, item 11).
    expect(r.stderr).toContain(`Update it with pip from the new release's wheel (the name cudaenv on the Python package index is not this project's): ${join(venv, 'bin', 'python')} -m pip install --upgrade BASE/cudaenv-VERSION-py3-none-manylinux_2_28_${MACHINE[HOST_ARCH]}.whl, BASE being the release's download URL`);
    expect(r.stderr).not.toMatch(/pip install --upgrade cudaenv(\s|$)/);
  });

  testIf(PIPX && CAN_HIDE_NODE, PIPX ? NEEDS_HIDE_NODE : 'needs Debian\'s pipx (apt-get install pipx)')('Debian\'s pipx installs it offline; the cudaenv it links runs with node hidden; self-update names pipx', () => {
    const pipxHome = join(tmp.dir, 'pipx');
    const pipxBin = join(tmp.dir, 'pipx-bin');
    const env = {PATH: '/usr/bin:/bin', HOME: tmp.dir, PIPX_HOME: pipxHome, PIPX_BIN_DIR: pipxBin, PIP_NO_INDEX: '1'};
    const install = spawnSync('/usr/bin/pipx', ['install', WHEEL], {env, encoding: 'utf8'});
    expect(install.stderr + install.stdout).toContain('cudaenv');
    expect(install.status).toBe(0);
    expect(readdirSync(pipxBin)).toEqual(['cudaenv']);
    const r = spawnSync(WITHOUT_NODE, ['sh', '-c', 'cudaenv --version; cudaenv self-update'], {env: {...env, PATH: `${pipxBin}:/usr/bin:/bin`, CUDAENV_DIR: join(tmp.dir, 'store2')}, encoding: 'utf8'});
    expect(r.stdout).toMatch(new RegExp(`^cudaenv/${version} linux-`));
    expect(r.stderr).toContain('Update it with pipx: pipx upgrade cudaenv');
  });
});
