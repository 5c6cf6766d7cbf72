import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, mkdirSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';
import {makeCondaPrefix} from '../core/conda/fixtures-env.js';
import {rcLine} from '../../src/core/shell/shell.js';
import {bashWithoutNode, CAN_HIDE_NODE, DIST_EXE, EXE, exeEnv, HAVE_EXE, NEEDS_EXE, NEEDS_HIDE_NODE} from './exe.js';
import {existsSync} from 'node:fs';

/**
 * The single executable (issue 34): it needs nothing else. Each session below runs with the
 * executable alone in its bin directory and node hidden from the machine (test/exe/without-node.sh):
 * every command, the shell integration of bash, zsh and fish, the shims, completion, conda hooks.
 */

let tmp: {dir: string; cleanup: () => void};
let home: string;
let store: string;
let bin: string;
let exe: string;
let condaEnv: string;

beforeAll(() => {
  if (!HAVE_EXE) return;
  tmp = makeTempDir('cudaenv-exe-');
  home = join(tmp.dir, 'home');
  store = join(tmp.dir, 'store');
  bin = join(tmp.dir, 'bin');
  mkdirSync(home, {recursive: true});
  mkdirSync(bin, {recursive: true});
  exe = join(bin, 'cudaenv');
  copyFileSync(EXE, exe);
  makeFakeToolkit(join(store, 'versions', '12.4.1'), {version: '12.4.1'});
  makeFakeToolkit(join(store, 'versions', '12.2.0'), {version: '12.2.0'});
  condaEnv = makeCondaPrefix(join(tmp.dir, 'miniforge', 'envs', 'torch'), 'A');
});
afterAll(() => tmp?.cleanup());

const env = (extra: NodeJS.ProcessEnv = {}) => exeEnv(home, store, bin, extra);

describeIf(HAVE_EXE, NEEDS_EXE)('the executable', () => {
  test('--version names the pinned Node.js and prints no warning; NODE_OPTIONS (the user\'s, for their Node.js) does not reach it', () => {
    const r = spawnSync(exe, ['--version'], {env: env({NODE_OPTIONS: '--require /nonexistent/cudaenv-test.js'}), encoding: 'utf8'});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const pjson = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {version: string};
    expect(r.stdout).toMatch(new RegExp(`^cudaenv/${pjson.version.replaceAll('.', '\\.')} linux-(x64|arm64) node-v26\\.\\d+\\.\\d+\\n$`));
  });

  test('an unknown command goes through the bundled command_not_found hook', () => {
    const r = spawnSync(exe, ['isntall', '12.4'], {env: env(), encoding: 'utf8'});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('Did you mean `cudaenv install 12.4`?');
  });
});

describeIf(HAVE_EXE && CAN_HIDE_NODE, HAVE_EXE ? NEEDS_HIDE_NODE : NEEDS_EXE)('the executable with no node on the machine', () => {
  test('every command of the manifest loads from the bundle (its --help), oclif finding none on disk', () => {
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, unknown>};
    const ids = Object.keys(manifest.commands).map((id) => id.replaceAll(':', ' '));
    expect(ids.length).toBeGreaterThan(20);
    const script = [
      'command -v node && exit 99',
      ...ids.map((id) => `printf '== %s\\n' '${id}'; cudaenv ${id} --help >/dev/null 2>"$T/err" && echo ok || { echo "failed $?"; cat "$T/err"; }`),
    ].join('\n');
    const r = bashWithoutNode(script, env({T: tmp.dir}));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const failed = r.stdout.split('== ').filter((block) => block && !block.endsWith('\nok\n'));
    expect(failed).toEqual([]);
  });

  test('bash: init writes the executable\'s own path; use, deactivate, exec, which, the shims, completion', () => {
    const script = `set -eu
command -v node && exit 99
cudaenv init bash >/dev/null
. "$CUDAENV_DIR/shell/init.bash"
echo "bin=$_CUDAENV_BIN"
cudaenv use 12.4 2>/dev/null
echo "use=$(nvcc --version | grep release)"
echo "current=$(cudaenv current)"
cudaenv use 12.2 2>/dev/null
echo "use2=$(nvcc --version | grep release)"
cudaenv deactivate 2>/dev/null
echo "after=$(command -v nvcc || echo none)"
echo "exec=$(cudaenv exec --cuda 12.4 nvcc --version | grep release)"
echo "which=$(cudaenv which --cuda 12.2 nvcc 2>/dev/null || cudaenv which nvcc)"
cudaenv global 12.2 >/dev/null 2>&1
cudaenv rehash >/dev/null 2>&1
echo "shim=$("$CUDAENV_DIR/shims/nvcc" --version | grep release)"
eval "$(cudaenv completion bash)"
COMP_WORDS=(cudaenv us); COMP_CWORD=1; _cudaenv_complete
echo "complete=\${COMPREPLY[*]}"
COMP_WORDS=(cudaenv use 12); COMP_CWORD=2; _cudaenv_complete
echo "complete2=\${COMPREPLY[*]}"
`;
    const r = bashWithoutNode(script, env());
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    expect(out.bin).toBe(exe);
    expect(out.use).toContain('release 12.4');
    expect(out.current).toMatch(/^12\.4\.1/);
    expect(out.use2).toContain('release 12.2');
    expect(out.after).toBe('none');
    expect(out.exec).toContain('release 12.4');
    expect(out.which).toBe(join(store, 'versions', '12.2.0', 'bin', 'nvcc'));
    expect(out.shim).toContain('release 12.2');
    expect(out.complete).toBe('use');
    expect(out.complete2!.split(' ').sort()).toEqual(['12.2.0', '12.4.1']);
  });

  test('zsh and fish: the start file `init` writes sources the shell code it put in the store; use switches', () => {
    const script = `set -eu
command -v node && exit 99
cudaenv init zsh >/dev/null
zsh -fc '. "$CUDAENV_DIR/shell/init.zsh" && cudaenv use 12.4 2>/dev/null && echo "zsh=$_CUDAENV_BIN $(nvcc --version | grep release)"'
cudaenv init fish >/dev/null
fish --no-config -c 'source $CUDAENV_DIR/shell/init.fish; and cudaenv use 12.2 2>/dev/null; and echo "fish=$_CUDAENV_BIN "(nvcc --version | grep release)'
`;
    const r = bashWithoutNode(script, env());
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`zsh=${exe} Cuda compilation tools, release 12.4`);
    expect(r.stdout).toContain(`fish=${exe} Cuda compilation tools, release 12.2`);
  });

  test('the README\'s fish line sources the start file of CUDAENV_DIR\'s store, starting no cudaenv (issue 34, item 8)', () => {
    const script = `set -eu
cudaenv init fish >/dev/null
PATH=/usr/bin:/bin fish --no-config -c "$LINE"'; echo "bin=$_CUDAENV_BIN"'
`;
    const r = bashWithoutNode(script, env({LINE: rcLine('fish')}));
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`bin=${exe}\n`);
  });

  test('conda hooks: install writes them, and activation (conda sources activate.d) puts the version on PATH', () => {
    const script = `set -eu
command -v node && exit 99
CONDA_PREFIX="$ENVDIR" cudaenv conda hook install 12.4 >/dev/null 2>&1
export CONDA_PREFIX="$ENVDIR"
. "$ENVDIR/etc/conda/activate.d/~~cudaenv.sh"
echo "conda=$(nvcc --version | grep release)"
. "$ENVDIR/etc/conda/deactivate.d/~~cudaenv.sh"
echo "after=$(command -v nvcc || echo none)"
`;
    const r = bashWithoutNode(script, env({ENVDIR: condaEnv}));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('conda=Cuda compilation tools, release 12.4');
    expect(r.stdout).toContain('after=none');
  });

  test('check and doctor run (the loader model, the release table and every data file come from the executable)', () => {
    const script = `set -u
command -v node && exit 99
cudaenv check "$CUDAENV_DIR/versions/12.4.1/lib64" >/dev/null 2>&1; echo "check=$?"
cudaenv doctor --json > "$T/doctor.json" 2>/dev/null; echo "doctor=$?"
cudaenv ls-remote --help >/dev/null; echo "ls-remote=$?"
`;
    const r = bashWithoutNode(script, env({T: tmp.dir}));
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('check=0');
    expect(r.stdout).toMatch(/doctor=[01]\n/);
    expect(JSON.parse(readFileSync(join(tmp.dir, 'doctor.json'), 'utf8'))).toHaveProperty('findings');
  });
});

const ARM64 = join(DIST_EXE, 'cudaenv-linux-arm64');
const QEMU_ROOT = '/usr/aarch64-linux-gnu';
const HAVE_QEMU = spawnSync('sh', ['-c', 'command -v qemu-aarch64-static'], {stdio: 'ignore'}).status === 0 && existsSync(join(QEMU_ROOT, 'lib', 'ld-linux-aarch64.so.1'));

describeIf(existsSync(ARM64) && HAVE_QEMU && CAN_HIDE_NODE, !existsSync(ARM64) ? `needs ${ARM64} (npm run build:exe)` : !HAVE_QEMU ? 'needs qemu-user-static and the aarch64 cross libraries (libc6-arm64-cross libstdc++6-arm64-cross libatomic1-arm64-cross)' : NEEDS_HIDE_NODE)('the linux-arm64 executable under qemu-user, node hidden', () => {
  test('--version, the fast path (current --json), oclif (ls, init bash)', () => {
    const script = `set -eu
command -v node && exit 99
q() { qemu-aarch64-static -L ${QEMU_ROOT} "$ARM64" "$@"; }
q --version
q current --json | tr -d ' \\n'; echo
q ls
q init bash | grep -c _cudaenv_switch
`;
    const r = bashWithoutNode(script, env({ARM64}));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^cudaenv\/\S+ linux-arm64 node-v26\./);
    expect(r.stdout).toContain('"version"');
    expect(r.stdout).toContain('12.4.1');
    expect(r.stdout).toContain('12.2.0');
  });
});
