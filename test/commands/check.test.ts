import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {existsSync, mkdirSync, readFileSync, realpathSync, statSync, symlinkSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {buildLib, HAVE_GCC} from '../core/elf/fixtures.js';
import {describeIf, testIf} from '../helpers/skip.js';
import {hostGlibcAtLeast, NEEDS, PYTHON_EXE} from '../helpers/capabilities.js';

/** `cudaenv check` through the built CLI, on gcc-built fixtures laid out like pip wheels and a store. */
const d = describeIf(HAVE_GCC, 'needs gcc (apt-get install gcc)');

d('cudaenv check', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  let oldDir: string;
  let cusparse: string;
  let ext: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(() => {
    tmp = makeTempDir('cudaenv-check-cmd-');
    store = join(tmp.dir, 'store');
    const sp = join(tmp.dir, 'venv', 'lib', 'python3.11', 'site-packages');
    const jit = buildLib({
      out: join(sp, 'nvidia', 'nvjitlink', 'lib', 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12',
      source: 'int __nvJitLinkComplete_12_4(void){return 0;}\n',
      versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkComplete_12_4; local: *; };\n',
    });
    oldDir = join(store, 'versions', '12.3.2', 'lib64');
    buildLib({
      out: join(oldDir, 'libnvJitLink.so.12'), soname: 'libnvJitLink.so.12', source: 'int __nvJitLinkComplete_12_3(void){return 0;}\n',
      versionScript: 'libnvJitLink.so.12 { global: __nvJitLinkComplete_12_3; local: *; };\n',
    });
    cusparse = buildLib({
      out: join(sp, 'nvidia', 'cusparse', 'lib', 'libcusparse.so.12'), soname: 'libcusparse.so.12',
      source: '#include <stdlib.h>\nint __nvJitLinkComplete_12_4(void);\nint cusparseCreate(void){return __nvJitLinkComplete_12_4() + (getenv("X") != 0);}\n',
      link: [jit], runpath: '$ORIGIN:$ORIGIN/../../nvjitlink/lib',
    });
    writeFileSync(join(sp, 'nvidia', 'cusparse', 'lib', 'libcusparse.so'), '/* GNU ld script */\nINPUT(libcusparse.so.12)\n');
    ext = buildLib({out: join(tmp.dir, 'ext', 'mod.so'), source: 'extern long PyLong_AsLong(void*); long m(void*o){return PyLong_AsLong(o);}\n'});
    env = cliEnv(store, {LD_LIBRARY_PATH: '', VIRTUAL_ENV: join(tmp.dir, 'venv'), LD_PRELOAD: ''});
    delete env.LD_LIBRARY_PATH;
    delete env.LD_PRELOAD;
  });
  afterAll(() => tmp?.cleanup());

  test('a clean directory: exit 0, one summary line, the linker script skipped with a note', () => {
    const r = runCli(['check', join(tmp.dir, 'venv', 'lib', 'python3.11', 'site-packages', 'nvidia', 'cusparse', 'lib')], {env});
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('libcusparse.so: a linker script');
    expect(r.stdout.trim().split('\n').pop()).toBe('all 1 library resolves');
  });

  test('the seed case: exit 1, the rule, the shadowed candidate and the fix', () => {
    const r = runCli(['check', cusparse, '--ld-library-path', oldDir], {env});
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('error: undefined symbol:');
    expect(r.stdout).toContain(`picked:   ${oldDir}/libnvJitLink.so.12 (LD_LIBRARY_PATH entry ${oldDir})`);
    expect(r.stdout).toMatch(/shadowed: .*nvjitlink\/lib\/libnvJitLink\.so\.12 \(DT_RUNPATH entry \$ORIGIN\/\.\.\/\.\.\/nvjitlink\/lib of .*\), which would satisfy it/);
    expect(r.stdout.trim().split('\n').pop()).toMatch(/^this LD_LIBRARY_PATH makes the nvidia-cusparse wheel's libcusparse\.so\.12 bind .*12\.3\.2\/lib64\/libnvJitLink\.so\.12, which lacks __nvJitLinkComplete_12_4; run `cudaenv use 12\.3\.2 --ld-library-path none`/);
    // Both ways out, as issue 3 asks: drop the entry, or a toolkit that has the symbol.
    expect(r.stdout).toMatch(/^ {2}fix: +run `cudaenv use 12\.3\.2 --ld-library-path none` .*, or `cudaenv use 12\.4` \(CUDA 12\.4 or newer provides it\)$/m);
  });

  test('--json: ok, objects with needed edges and via, problems with every field', () => {
    const r = runCli(['check', cusparse, '--ld-library-path', oldDir, '--json'], {env});
    expect(r.status).toBe(1);
    const j = JSON.parse(r.stdout);
    expect(j.ok).toBe(false);
    expect(j.objects[0]).toMatchObject({path: cusparse, soname: 'libcusparse.so.12'});
    expect(j.objects[0].needed).toContainEqual(expect.objectContaining({name: 'libnvJitLink.so.12', path: `${oldDir}/libnvJitLink.so.12`, via: 'ld_library_path'}));
    expect(j.objects[0].needed).toContainEqual(expect.objectContaining({name: 'libc.so.6', via: 'ld.so.cache'}));
    const p = j.problems.find((x: {kind: string}) => x.kind === 'undefined-symbol');
    expect(Object.keys(p)).toEqual(expect.arrayContaining(['kind', 'object', 'library', 'version', 'symbol', 'chosen', 'shadowed', 'explanation', 'fix']));
    expect(p).toMatchObject({object: cusparse, library: 'libnvJitLink.so.12', version: 'libnvJitLink.so.12', symbol: '__nvJitLinkComplete_12_4'});
    const clean = JSON.parse(runCli(['check', cusparse, '--json'], {env}).stdout);
    expect(clean.ok).toBe(true);
    expect(clean.problems).toEqual([]);
  });

  test('--tree shows the resolved path and the rule on every edge', () => {
    const r = runCli(['check', cusparse, '--tree'], {env});
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toBe(cusparse);
    expect(r.stdout).toMatch(/[├└]── libnvJitLink\.so\.12 => .*nvjitlink\/lib\/libnvJitLink\.so\.12 \[runpath: DT_RUNPATH entry \$ORIGIN\/\.\.\/\.\.\/nvjitlink\/lib of /);
    // A cache hit: the rule names the cache file once ("ld.so.cache: ld.so.cache (...)" said it twice).
    expect(r.stdout).toMatch(/libc\.so\.6 => \/\S+libc\.so\.6 \[ld\.so\.cache \(\/etc\/ld\.so\.cache\)\]/);
  });

  test('unversioned undefined symbols are a note, a failure with --strict, and fine with --exe python', () => {
    const r = runCli(['check', ext], {env});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('PyLong_AsLong');
    expect(runCli(['check', ext, '--strict'], {env}).status).toBe(1);
    const strictJson = JSON.parse(runCli(['check', ext, '--strict', '--json'], {env}).stdout);
    expect(strictJson.ok).toBe(false);
  });

  testIf(PYTHON_EXE !== null, NEEDS.tool('python3'))('--exe python (the interpreter the tests run) binds the Py* symbols', () => {
    const withExe = runCli(['check', ext, '--strict', '--exe', PYTHON_EXE!], {env});
    expect({status: withExe.status, stderr: withExe.stderr}).toEqual({status: 0, stderr: ''});
  });

  test('--cuda SPEC checks as if that version were active (its lib64 first on LD_LIBRARY_PATH)', () => {
    const r = runCli(['check', cusparse, '--cuda', '12.3'], {env});
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('cudaenv use 12.3.2 --ld-library-path none');
    const none = runCli(['check', cusparse, '--cuda', '12.3', '--ld-library-path', '/nonexistent'], {env});
    expect(none.status).toBe(1);
    // Without PATH: the version's libraries plus the Python environment's CUDA libraries.
    const all = JSON.parse(runCli(['check', '--cuda', '12.3', '--json'], {env}).stdout);
    expect(all.checked).toEqual(expect.arrayContaining([`${oldDir}/libnvJitLink.so.12`, cusparse]));
    expect(all.ok).toBe(false);
    const missing = runCli(['check', '--cuda', '11.8'], {env});
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('11.8');
  });

  testIf(existsSync('/usr/local/cuda'), NEEDS.devToolkit('/usr/local/cuda'))('--cuda system: /usr/local/cuda\'s libraries, as a `system` selection without flags', () => {
    const system = runCli(['check', '--cuda', 'system', '--json'], {env});
    expect(system.stderr).not.toContain('nothing to check');
    expect(JSON.parse(system.stdout).checked).toEqual(expect.arrayContaining([expect.stringMatching(/^\/usr\/local\/cuda\/lib(64)?\//), cusparse]));
  });

  testIf(PYTHON_EXE !== null, NEEDS.tool('python3'))('without PATH, the Python environment\'s wheels are checked as its interpreter dlopens them', () => {
    // A venv whose wheel has a 64 KB initial-exec TLS block: `import` fails there, `ldd -r` sees nothing.
    const venv = join(tmp.dir, 'venv-tls');
    const lib = buildLib({out: join(venv, 'lib', 'python3.11', 'site-packages', 'nvidia', 'tlsheavy', 'lib', 'libtlsheavy.so'), soname: 'libtlsheavy.so',
      source: '__thread char big[65536] __attribute__((tls_model("initial-exec")));\nchar *get_big(void){return big;}\n'});
    const tlsEnv = {...env, VIRTUAL_ENV: venv};
    // No interpreter in the environment: as `ldd -r` loads them.
    const plain = JSON.parse(runCli(['check', '--cuda', '12.3', '--json'], {env: tlsEnv}).stdout);
    expect(plain.checked).toEqual(expect.arrayContaining([`${oldDir}/libnvJitLink.so.12`, lib]));
    expect(plain.ok).toBe(true);
    // With bin/python3, as `python3 -m venv` makes it: as that interpreter dlopens them.
    mkdirSync(join(venv, 'bin'));
    symlinkSync(PYTHON_EXE!, join(venv, 'bin', 'python3'));
    const r = runCli(['check', '--cuda', '12.3'], {env: tlsEnv});
    expect(r.status).toBe(1);
    // Without PATH the first line says what the check chose to look at, and how.
    expect(r.stdout.split('\n')[0]).toBe(`checking CUDA 12.3.2: ${oldDir}; the Python environment's CUDA libraries: 1 directory, as ${realpathSync(PYTHON_EXE!)} loads them`);
    expect(runCli(['check', lib], {env: tlsEnv}).stdout).not.toContain('checking');
    expect(r.stdout).toContain('libtlsheavy.so');
    expect(r.stdout).toContain('static TLS');
    const json = JSON.parse(runCli(['check', '--cuda', '12.3', '--json'], {env: tlsEnv}).stdout);
    expect(json.problems.map((p: {kind: string; object: string}) => [p.kind, p.object])).toEqual([['static-tls', lib]]);
    // The toolkit's own libraries are still checked as `ldd` loads them: the interpreter is no object of theirs.
    expect(json.objects.find((o: {path: string}) => o.path === `${oldDir}/libnvJitLink.so.12`)).toBeDefined();
  });

  testIf(PYTHON_EXE !== null, NEEDS.tool('python3'))('without PATH and no venv, python3 on PATH is asked once: the cached answer, and its interpreter verdict, check the same', () => {
    // pip install --target DIR on PYTHONPATH: python3 finds the wheel there (no VIRTUAL_ENV shortcut).
    const target = join(tmp.dir, 'target-tls');
    const lib = buildLib({out: join(target, 'nvidia', 'tlsheavy', 'lib', 'libtlsheavy.so'), soname: 'libtlsheavy.so',
      source: '__thread char big[65536] __attribute__((tls_model("initial-exec")));\nchar *get_big(void){return big;}\n'});
    const pyEnv: NodeJS.ProcessEnv = {...env, PATH: `${dirname(PYTHON_EXE!)}:${env.PATH}`, PYTHONPATH: target, HOME: tmp.dir};
    delete pyEnv.VIRTUAL_ENV;
    const cwd = join(tmp.dir, 'project');
    mkdirSync(cwd);
    const first = runCli(['check', '--cuda', '12.3'], {env: pyEnv, cwd});
    expect(first.status).toBe(1);
    expect(first.stdout.split('\n')[0]).toBe(`checking CUDA 12.3.2: ${oldDir}; the Python environment's CUDA libraries: 1 directory, as ${realpathSync(PYTHON_EXE!)} loads them`);
    expect(first.stdout).toContain('static TLS');
    expect(first.stdout).toContain(lib);
    const file = join(store, 'cache', 'check', 'python-env.json');
    expect(JSON.parse(readFileSync(file, 'utf8')).entries[0].program).toEqual([expect.any(String), realpathSync(PYTHON_EXE!)]);
    const written = statSync(file);
    // A file created in the working directory changes nothing: a hit (the file is not written again), the same text.
    writeFileSync(join(cwd, 'notes.txt'), '');
    const again = runCli(['check', '--cuda', '12.3'], {env: pyEnv, cwd});
    expect({status: again.status, stdout: again.stdout}).toEqual({status: first.status, stdout: first.stdout});
    expect([statSync(file).ino, statSync(file).mtimeMs]).toEqual([written.ino, written.mtimeMs]);
  });

  test('a truncated library: a line of its own in a directory, a clear usage error when named', () => {
    const dir = join(tmp.dir, 'damaged');
    mkdirSync(dir);
    writeFileSync(join(dir, 'libcut.so.1'), readFileSync(cusparse).subarray(0, 2000));
    const inDir = runCli(['check', dir], {env});
    expect(inDir.status).toBe(0);
    expect(inDir.stdout).toMatch(new RegExp(`^note: skipped ${join(dir, 'libcut.so.1')}: a damaged ELF file: .*past the end of the file`, 'm'));
    const named = runCli(['check', join(dir, 'libcut.so.1')], {env});
    expect(named.status).toBe(2);
    expect(named.stderr).toContain(`${join(dir, 'libcut.so.1')} is a damaged ELF file: `);
    expect(named.stderr).toContain('truncated or corrupt');
  });

  test('empty files: named where a library should be, counted with the other files elsewhere (a package tree\'s __init__.py)', () => {
    const dir = join(tmp.dir, 'package-tree');
    mkdirSync(join(dir, 'pkg', 'sub'), {recursive: true});
    for (const name of ['pkg/__init__.py', 'pkg/sub/__init__.py', 'pkg/py.typed']) writeFileSync(join(dir, name), '');
    writeFileSync(join(dir, 'pkg', 'libcut.so.1'), '');
    const r = runCli(['check', '--recursive', dir], {env});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`note: skipped ${join(dir, 'pkg', 'libcut.so.1')}: an empty file (0 bytes), not a shared object\n`);
    expect(r.stdout).not.toContain('__init__.py');
    expect(r.stdout).toContain('note: skipped 3 other files that are not ELF shared objects (--json lists them)');
    const json = JSON.parse(runCli(['check', '--recursive', '--json', dir], {env}).stdout);
    expect(json.skipped.filter((s: {reason: string}) => s.reason.startsWith('an empty file'))).toHaveLength(4);
  });

  test('bad usage exits 2 with a clear message', () => {
    const nothing = runCli(['check', join(tmp.dir, 'nope.so')], {env});
    expect(nothing.status).toBe(2);
    expect(nothing.stderr).toContain('nope.so: no such file or directory');
    // A symlink loop is named as one, not as a missing file.
    symlinkSync('loop-b.so', join(tmp.dir, 'loop-a.so'));
    symlinkSync('loop-a.so', join(tmp.dir, 'loop-b.so'));
    const loop = runCli(['check', join(tmp.dir, 'loop-a.so')], {env});
    expect(loop.status).toBe(2);
    expect(loop.stderr).toContain(`${join(tmp.dir, 'loop-a.so')}: too many levels of symbolic links (a link that leads back to itself)`);
    expect(loop.stderr).toContain('Fix the link');
    const script = join(tmp.dir, 'venv', 'lib', 'python3.11', 'site-packages', 'nvidia', 'cusparse', 'lib', 'libcusparse.so');
    const notDir = runCli(['check', join(script, 'x.so')], {env});
    expect(notDir.stderr).toContain('x.so: a component of the path is not a directory');
    const notElf = runCli(['check', script], {env});
    expect(notElf.status).toBe(2);
    expect(notElf.stderr).toContain('a linker script');
    expect(runCli(['check', cusparse, '--bogus'], {env}).status).toBe(2);
    const badExe = runCli(['check', cusparse, '--exe', script], {env});
    expect(badExe.status).toBe(2);
    expect(badExe.stderr).toContain('--exe');
    for (const bad of ['5000', '64m', '2k', 'big']) {
      const r = runCli(['check', cusparse, '--page-size', bad], {env});
      expect({bad, status: r.status}).toEqual({bad, status: 2});
      expect(r.stderr).toContain(`--page-size ${bad}: not a page size`);
    }
  });

  // The rule itself is checked against a 64 KB aarch64 kernel's loader in loader-aarch64.test.ts.
  testIf(hostGlibcAtLeast(2, 35), 'needs a host glibc of 2.35 or later (ld.so checks segments against the page size from 2.35)')(
    '--page-size 64k: a library linked for 4 KB pages cannot load under a 64 KB kernel; one linked for 64 KB can', () => {
      const dir = join(tmp.dir, 'pages');
      const small = buildLib({out: join(dir, 'libsmall.so'), soname: 'libsmall.so', source: 'int s(void){return 1;}\n', extra: ['-Wl,-z,max-page-size=4096']});
      const big = buildLib({out: join(dir, 'libbig.so'), soname: 'libbig.so', source: 'int b(void){return 1;}\n', extra: ['-Wl,-z,max-page-size=65536']});
      expect(runCli(['check', small], {env}).status).toBe(0);
      const r = runCli(['check', small, '--page-size', '64k'], {env});
      expect(r.status).toBe(1);
      expect(r.stdout).toContain('ELF load command address/offset not page-aligned');
      expect(r.stdout).toContain('-Wl,-z,max-page-size=65536');
      expect(runCli(['check', big, '--page-size', '65536'], {env}).status).toBe(0);
    });
});
