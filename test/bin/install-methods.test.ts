import {afterAll, beforeAll, expect, test} from '@jest/globals';
import {spawnSync, type SpawnSyncReturns} from 'node:child_process';
import {existsSync, lstatSync, readdirSync, readFileSync, realpathSync, rmSync} from 'node:fs';
import {userInfo} from 'node:os';
import {dirname, join, relative} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {describeIf} from '../helpers/skip.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeFakeToolkit} from '../helpers/toolkit.js';

// The ways to install cudaenv, each from a fresh clone of this repository's HEAD into a clean
// prefix, as the README states them. Slow (npm ci, a build, npm installs): one file, one clone.
const IS_GIT = spawnSync('git', ['-C', REPO_ROOT, 'rev-parse', 'HEAD'], {stdio: 'ignore'}).status === 0;
// The dependencies come from the npm registry or npm's cache: without either nothing installs.
const REGISTRY = IS_GIT && spawnSync('npm', ['view', '@oclif/core@4.14.0', 'version', '--prefer-offline'], {stdio: 'ignore', timeout: 60000}).status === 0;
const NPM_FLAGS = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'];

describeIf(REGISTRY, IS_GIT ? 'needs the npm registry or its metadata in the npm cache' : 'needs a git checkout')('installing cudaenv', () => {
  const {dir, cleanup} = makeTempDir('cudaenv-install-');
  afterAll(cleanup);
  const clone = join(dir, 'clone');
  const home = join(dir, 'home');
  // Only what a user's shell would have: no CUDAENV_*, no NODE_OPTIONS from jest. npm's cache is the
  // user's own (from the password database: the test run's HOME is a fresh directory, and an empty
  // cache would make every install fetch its dependencies again).
  const env: NodeJS.ProcessEnv = {PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, npm_config_cache: join(userInfo().homedir, '.npm'), CUDAENV_DIR: join(dir, 'store'), LANG: 'C.UTF-8'};
  const run = (cmd: string, args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> =>
    spawnSync(cmd, args, {cwd, env: {...env, ...extra}, encoding: 'utf8', timeout: 600000});
  const ok = (r: SpawnSyncReturns<string>): string => {
    if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  let tgz: string;
  let packed: string[];

  beforeAll(() => {
    ok(run('git', ['clone', '-q', REPO_ROOT, clone], dir));
    // A fresh clone has no dist/: the README's quick start line, verbatim (`npm ci` installs and
    // its prepare builds; then doctor, which exits 1 where it finds a problem, as on a machine
    // without CUDA). npm's flags come from the environment, so the line runs as written.
    const quickStart = /## Quick start[\s\S]*?```sh\n([^\n]*)\n/.exec(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'))![1]!;
    const first = run('sh', ['-c', quickStart], clone, {npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_loglevel: 'error'});
    expect({line: quickStart, status: first.status === 0 || first.status === 1, doctor: /driver|toolkit/i.test(first.stdout)}).toEqual({line: quickStart, status: true, doctor: true});
    expect(existsSync(join(clone, 'dist', 'fast-path.bundle.cjs'))).toBe(true);
    // --ignore-scripts: prepare would only build again what npm ci's prepare has just built (11 of
    // npm pack's 14 CPU-seconds); the package holds that build (the first test checks what is in it).
    const packOut = ok(run('npm', ['pack', '--json', '--ignore-scripts', ...NPM_FLAGS], clone));
    const out = JSON.parse(packOut.slice(packOut.search(/^\[/m))) as Array<{filename: string; files: Array<{path: string}>}>;
    tgz = join(clone, out[0]!.filename);
    packed = out[0]!.files.map((f) => f.path).sort();
  }, 900000);

  test('the package holds what cudaenv runs from and nothing else; publish --dry-run lists the same', () => {
    const top = [...new Set(packed.map((p) => p.split('/')[0]))].sort();
    expect(top).toEqual(['README.md', 'bin', 'dist', 'node_modules', 'oclif.manifest.json', 'package.json', 'shims']);
    for (const f of ['bin/cudaenv', 'bin/run.cjs', 'bin/run.js', 'dist/fast-path.bundle.cjs', 'dist/fast-path.js', 'dist/core/versions/releases.json', 'dist/hooks/command-not-found.js', 'shims/shim.sh']) expect(packed).toContain(f);
    // Every compiled module is there: one for each source file.
    const sources = (d: string): string[] => readdirSync(join(clone, 'src', d), {withFileTypes: true}).flatMap((e) => (e.isDirectory() ? sources(join(d, e.name)) : e.name.endsWith('.ts') ? [join('dist', d, e.name.replace(/\.ts$/, '.js'))] : []));
    for (const js of sources('')) expect(packed).toContain(js);
    // Every dependency is bundled, with exactly the packages it needs at run time (the production
    // tree npm installed in the clone): no development tool, nothing missing.
    const pkg = JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')) as {dependencies: Record<string, string>; bundleDependencies: string[]};
    expect([...pkg.bundleDependencies].sort()).toEqual(Object.keys(pkg.dependencies).sort());
    const production = ok(run('npm', ['ls', '--omit=dev', '--all', '--parseable', ...NPM_FLAGS], clone)).trim().split('\n').slice(1).map((p) => relative(clone, p)).sort();
    expect(production.length).toBeGreaterThan(Object.keys(pkg.dependencies).length);
    for (const p of production) expect(packed).toContain(`${p}/package.json`);
    for (const f of packed.filter((f) => f.startsWith('node_modules/'))) expect(production.some((p) => f.startsWith(`${p}/`))).toBe(true);
    expect(packed.some((f) => /^node_modules\/(typescript|jest|oclif|esbuild)\//.test(f))).toBe(false);
    // --ignore-scripts here too: prepare would only build again what is already built.
    const dry = run('npm', ['publish', '--dry-run', '--json', '--ignore-scripts', ...NPM_FLAGS], clone);
    // npm 11 keys the report by package name; older npm gives the package itself.
    const report = JSON.parse(dry.stdout.slice(dry.stdout.search(/^\{/m))) as {files?: Array<{path: string}>; cudaenv?: {files: Array<{path: string}>}};
    expect((report.cudaenv ?? report).files!.map((f) => f.path).sort()).toEqual(packed);
    expect(dry.stderr).not.toContain('auto-corrected');
  }, 600000);

  /** The installed P/bin/cudaenv: --version, init, use, check, doctor and the shims. */
  const works = (prefix: string, toolkitDir: string): void => {
    const cudaenv = join(prefix, 'bin', 'cudaenv');
    const store = join(dir, 'store');
    rmSync(store, {recursive: true, force: true});
    expect(ok(run(cudaenv, ['--version'], dir))).toMatch(/^cudaenv\/\d+\.\d+\.\d+ linux-/);
    const tk = makeFakeToolkit(toolkitDir, {version: '12.4.1'});
    ok(run(cudaenv, ['add', tk], dir));
    const userPath = `${join(prefix, 'bin')}:/usr/bin:/bin`;
    const script = `eval "$(cudaenv init bash)" && cudaenv use 12.4.1 && printf '%s\\n' "$CUDA_HOME" && nvcc --version | tail -n 2`;
    const shell = run('bash', ['--norc', '-c', script], dir, {PATH: userPath});
    expect(shell.status).toBe(0);
    expect(shell.stdout).toContain(join(store, 'versions', '12.4.1'));
    expect(shell.stdout).toContain('V12.4.131');
    expect(run(cudaenv, ['check', join(tk, 'lib64')], dir).status).not.toBe(2);
    const doctor = JSON.parse(run(cudaenv, ['doctor', '--json'], dir, {CUDAENV_VERSION: '12.4.1'}).stdout);
    expect(doctor.facts.activeToolkit.version).toBe('12.4.1');
    // The shims run the selected version without the shell integration.
    ok(run(cudaenv, ['global', '12.4.1'], dir));
    const shim = run('sh', ['-c', 'nvcc --version | tail -n 2'], dir, {PATH: `${join(store, 'shims')}:/usr/bin:/bin`});
    expect(shim.stdout).toContain('V12.4.131');
  };

  test('npm install -g --prefix P ./cudaenv-*.tgz: --version, init, use, check, doctor and shims work', () => {
    const prefix = join(dir, 'prefix');
    ok(run('npm', ['install', '-g', '--prefix', prefix, ...NPM_FLAGS, tgz], dir));
    works(prefix, join(dir, 'toolkit'));
  }, 600000);

  test('npm install -g --prefix P git+file://CLONE: a real install, which works once the clone and npm\'s temporary clone are gone', () => {
    // npm prepares a git dependency in a temporary clone with an inner global install that links
    // P/lib/node_modules/cudaenv to that clone (npm/cli#8440); scripts/prepare.mjs undoes the link.
    const source = join(dir, 'source');
    ok(run('git', ['clone', '-q', REPO_ROOT, source], dir));
    const prefix = join(dir, 'git-prefix');
    ok(run('npm', ['install', '-g', '--prefix', prefix, ...NPM_FLAGS, `git+file://${source}`], dir));
    rmSync(source, {recursive: true, force: true});
    const installed = join(prefix, 'lib', 'node_modules', 'cudaenv');
    expect(lstatSync(installed).isSymbolicLink()).toBe(false);
    expect(realpathSync(join(prefix, 'bin', 'cudaenv'))).toBe(join(realpathSync(installed), 'bin', 'cudaenv'));
    expect(JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).name).toBe('cudaenv');
    // Built in npm's clone and packed with its dependencies: nothing in the prefix points elsewhere.
    expect(existsSync(join(installed, 'dist', 'fast-path.js'))).toBe(true);
    expect(existsSync(join(installed, 'node_modules', '@oclif', 'core', 'package.json'))).toBe(true);
    const links = (d: string): string[] => readdirSync(d, {withFileTypes: true}).flatMap((e) => (e.isSymbolicLink() ? [join(d, e.name)] : e.isDirectory() ? links(join(d, e.name)) : []));
    const top = realpathSync(prefix);
    for (const link of links(prefix)) expect(existsSync(link) && realpathSync(link).startsWith(`${top}/`) ? 'inside' : link).toBe('inside');
    works(prefix, join(dir, 'git-toolkit'));
  }, 900000);
});
