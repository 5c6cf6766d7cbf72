import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {existsSync, readFileSync, rmSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {cliEnv, runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {makeStore} from '../core/link/fixtures.js';
import {describeIf} from '../helpers/skip.js';
import {DOWNLOADED} from '../helpers/capabilities.js';

const LMOD_INIT = '/usr/share/lmod/lmod/init/bash';
const hasLmod = existsSync(LMOD_INIT);
const describeLmod = describeIf(hasLmod, `needs Lmod: no ${LMOD_INIT} (apt-get install lmod)`);
/** Debian's Environment Modules 5.2, unpacked (its package conflicts with lmod's): run as `tclsh modulecmd.tcl`. */
const MODULECMD = join(DOWNLOADED, 'environment-modules', 'usr', 'lib', 'x86_64-linux-gnu', 'modulecmd.tcl');
const hasEnvModules = existsSync(MODULECMD) && spawnSync('tclsh', [], {input: 'exit 0\n'}).status === 0;
const describeEnvModules = describeIf(hasEnvModules, `needs Environment Modules (bash test/fixtures/fetch-cuda-libs.sh) and tclsh (apt-get install tcl)`);

let dir: string;
let cleanup: () => void;
let store: string;
let env: NodeJS.ProcessEnv;
let mf: string;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
  // A store path with a space, quotes, a backslash and a dollar: the modulefiles must carry it literally.
  store = join(dir, `my "store" \\ $HOME`);
  makeStore(store, ['12.2.0', '12.4.1', '11.8.0']);
  mf = join(dir, 'modulefiles');
  env = cliEnv(store, {HOME: dir, PATH: '/usr/bin:/bin', LD_LIBRARY_PATH: '/opt/mine'});
});
afterEach(() => cleanup());

/** PATH, CUDA_HOME, CUDA_PATH, LD_LIBRARY_PATH as one line each; <unset> marks an unset variable. */
const SHOW = 'printf "%s\\n" "$PATH" "${CUDA_HOME-<unset>}" "${CUDA_PATH-<unset>}" "${LD_LIBRARY_PATH-<unset>}"';

/** Runs module commands in a real bash with Lmod, printing the variables before and after each step. */
function lmod(steps: string[], extra: NodeJS.ProcessEnv = {}): string[][] {
  return modules(`. ${LMOD_INIT} >/dev/null 2>&1`, steps, extra);
}

/** The same with Environment Modules: its `module` is the eval of what modulecmd.tcl prints. */
function envModules(steps: string[], extra: NodeJS.ProcessEnv = {}): string[][] {
  return modules(`module() { eval "$(tclsh ${JSON.stringify(MODULECMD)} bash "$@")"; }`, steps, extra);
}

function modules(init: string, steps: string[], extra: NodeJS.ProcessEnv): string[][] {
  const script = [init, SHOW, ...steps.flatMap((s) => [`${s} >/dev/null 2>&1 || echo "FAILED: ${s}"`, SHOW])].join('\n');
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', script], {env: {...env, ...extra}, encoding: 'utf8'});
  expect(r.stderr).toBe('');
  const lines = r.stdout.trimEnd().split('\n');
  expect(lines.filter((l) => l.startsWith('FAILED'))).toEqual([]);
  const groups: string[][] = [];
  for (let i = 0; i < lines.length; i += 4) groups.push(lines.slice(i, i + 4));
  return groups;
}

function execView(spec: string, path: string, ld: string | undefined): string[] {
  const e: NodeJS.ProcessEnv = {...env, PATH: path};
  if (ld === undefined) delete e.LD_LIBRARY_PATH;
  else e.LD_LIBRARY_PATH = ld;
  const r = runCli(['exec', '--cuda', spec, '--', 'sh', '-c', SHOW], {env: e});
  expect({status: r.status, stderr: r.stderr}).toEqual({status: 0, stderr: ''});
  return r.stdout.trimEnd().split('\n');
}

describeLmod('cudaenv modulefiles with the real Lmod', () => {
  test('module load cuda/12.4 gives the environment cudaenv exec --cuda 12.4 gives; unload restores it', () => {
    const w = runCli(['modulefiles', '--dir', mf, '--json'], {env});
    expect({status: w.status, stderr: w.stderr}).toEqual({status: 0, stderr: ''});
    expect(JSON.parse(w.stdout).written.map((x: {version: string}) => x.version)).toEqual(['11.8.0', '12.2.0', '12.4.1']);
    const [start, used, loaded, unloaded] = lmod([`module use ${JSON.stringify(mf)}`, 'module load cuda/12.4', 'module unload cuda']);
    expect(used).toEqual(start);
    expect(loaded).toEqual(execView('12.4', start[0], start[3]));
    expect(loaded[1]).toBe(join(store, 'versions', '12.4.1'));
    expect(unloaded).toEqual(start);
  });

  test('family("cuda"): loading another version swaps; cuda/12 is the newest 12.x; LD_LIBRARY_PATH unset before stays unset after', () => {
    runCli(['modulefiles', '--dir', mf], {env});
    const [start, , a, b, c] = lmod([`module use ${JSON.stringify(mf)}`, 'module load cuda/11.8.0', 'module load cuda/12', 'module purge'], {LD_LIBRARY_PATH: undefined});
    expect(start[3]).toBe('<unset>');
    expect(a).toEqual(execView('11.8.0', start[0], undefined));
    expect(b).toEqual(execView('12', start[0], undefined));
    expect(b[1]).toBe(join(store, 'versions', '12.4.1'));
    expect(c).toEqual(start);
  });

  test('the ldLibraryPath policy none leaves LD_LIBRARY_PATH alone, as exec does', () => {
    expect(runCli(['config', 'ldLibraryPath', 'none'], {env}).status).toBe(0);
    runCli(['modulefiles', '--dir', mf], {env});
    expect(readFileSync(join(mf, 'cuda', '12.4.1.lua'), 'utf8')).not.toContain('LD_LIBRARY_PATH');
    const [start, , loaded] = lmod([`module use ${JSON.stringify(mf)}`, 'module load cuda/12.4.1']);
    expect(loaded).toEqual(execView('12.4.1', start[0], start[3]));
    expect(loaded[3]).toBe('/opt/mine');
  });
});

/** Tcl modulefiles, as `--format tcl` writes them, with the module tool `run` (Lmod or Environment Modules). */
function tclModulefileTests(run: (steps: string[], extra?: NodeJS.ProcessEnv) => string[][]): void {
  test('module load cuda/12.4 gives the environment cudaenv exec --cuda 12.4 gives; unload restores it', () => {
    const w = runCli(['modulefiles', '--format', 'tcl', '--dir', mf, '--json'], {env});
    expect({status: w.status, stderr: w.stderr}).toEqual({status: 0, stderr: ''});
    expect(JSON.parse(w.stdout)).toMatchObject({format: 'tcl', written: ['11.8.0', '12.2.0', '12.4.1'].map((version) => ({version, file: join(mf, 'cuda', version)}))});
    const [start, used, loaded, unloaded] = run([`module use ${JSON.stringify(mf)}`, 'module load cuda/12.4', 'module unload cuda']);
    expect(used).toEqual(start);
    expect(loaded).toEqual(execView('12.4', start[0], start[3]));
    expect(loaded[1]).toBe(join(store, 'versions', '12.4.1'));
    expect(unloaded).toEqual(start);
  });

  test('one cuda at a time: switch moves to another version; cuda/12 is the newest 12.x; LD_LIBRARY_PATH unset before stays unset after', () => {
    runCli(['modulefiles', '--format', 'tcl', '--dir', mf], {env});
    const [start, , a, b, c] = run([`module use ${JSON.stringify(mf)}`, 'module load cuda/11.8.0', 'module switch cuda cuda/12', 'module purge'], {LD_LIBRARY_PATH: undefined});
    expect(start[3]).toBe('<unset>');
    expect(a).toEqual(execView('11.8.0', start[0], undefined));
    expect(b).toEqual(execView('12', start[0], undefined));
    expect(b[1]).toBe(join(store, 'versions', '12.4.1'));
    expect(c).toEqual(start);
  });
}

describeLmod('cudaenv modulefiles --format tcl with the real Lmod', () => {
  // Lmod 8.6 writes a Tcl prepend-path into Lua without escaping " or \ (tcl2lua's output-path-foo):
  // a store path without them (the lua format carries any path; Environment Modules any in Tcl).
  beforeEach(() => {
    store = join(dir, 'my store $HOME');
    makeStore(store, ['12.2.0', '12.4.1', '11.8.0']);
    env = cliEnv(store, {HOME: dir, PATH: '/usr/bin:/bin', LD_LIBRARY_PATH: '/opt/mine'});
  });
  tclModulefileTests(lmod);
});
describeEnvModules('cudaenv modulefiles --format tcl with the real Environment Modules 5.2 (RHEL\'s `module`)', () => {
  tclModulefileTests(envModules);
  test('loading a second cuda while one is loaded is refused, as conflict says', () => {
    runCli(['modulefiles', '--format', 'tcl', '--dir', mf], {env});
    const script = `module() { eval "$(tclsh ${JSON.stringify(MODULECMD)} bash "$@")"; }\nmodule use ${JSON.stringify(mf)}\nmodule load cuda/11.8.0\nmodule load cuda/12.4 2>&1\necho "CUDA_HOME=$CUDA_HOME"`;
    const r = spawnSync('bash', ['--norc', '--noprofile', '-c', script], {env, encoding: 'utf8'});
    expect(r.stdout).toContain('ERROR: Conflicting cuda is loaded');
    expect(r.stdout).toContain(`CUDA_HOME=${join(store, 'versions', '11.8.0')}`);
  });
});

describe('cudaenv modulefiles files', () => {
  test('the modulefile carries family, whatis, PATH, LD_LIBRARY_PATH, CUDA_HOME/CUDA_PATH as Lua literals', () => {
    runCli(['modulefiles', '--dir', mf], {env});
    const v = join(store, 'versions', '12.4.1').replaceAll('\\', '\\\\').replaceAll('"', '\\"');
    expect(readFileSync(join(mf, 'cuda', '12.4.1.lua'), 'utf8').split('\n').slice(1)).toEqual([
      'whatis("Name: CUDA Toolkit")',
      'whatis("Version: 12.4.1")',
      `whatis("Description: NVIDIA CUDA Toolkit 12.4.1 (${v})")`,
      `help("CUDA Toolkit 12.4.1 from the cudaenv store: ${v}")`,
      'family("cuda")',
      `prepend_path("PATH", "${v}/bin")`,
      `prepend_path("LD_LIBRARY_PATH", "${v}/lib64")`,
      `setenv("CUDA_HOME", "${v}")`,
      `setenv("CUDA_PATH", "${v}")`,
      '',
    ]);
  });

  test('versions gone from the store lose their modulefile; files cudaenv did not write are never touched', () => {
    runCli(['modulefiles', '--dir', mf], {env});
    writeFileSync(join(mf, 'cuda', '10.2.89.lua'), '-- hand-written\n');
    rmSync(join(store, 'versions', '11.8.0'), {recursive: true});
    const r = JSON.parse(runCli(['modulefiles', '--dir', mf, '--json'], {env}).stdout);
    expect(r.removed).toEqual([join(mf, 'cuda', '11.8.0.lua')]);
    expect(existsSync(join(mf, 'cuda', '10.2.89.lua'))).toBe(true);
    writeFileSync(join(mf, 'cuda', '12.2.0.lua'), '-- an admin\'s own file\n');
    const refused = runCli(['modulefiles', '--dir', mf], {env});
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`${join(mf, 'cuda', '12.2.0.lua')} exists and was not written by cudaenv; leaving it alone`);
    expect(readFileSync(join(mf, 'cuda', '12.2.0.lua'), 'utf8')).toBe('-- an admin\'s own file\n');
  });

  test('--format tcl: a #%Module1.0 file of Tcl words; switching formats removes the other format\'s files, and only cudaenv\'s', () => {
    runCli(['modulefiles', '--dir', mf], {env});
    writeFileSync(join(mf, 'cuda', '10.2.89.lua'), '-- hand-written\n');
    const r = runCli(['modulefiles', '--format', 'tcl', '--dir', mf], {env});
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`removed ${join(mf, 'cuda', '12.4.1.lua')} (the lua format's, replaced by tcl)`);
    // This store path has a " and a \: Environment Modules reads it exactly, Lmod does not.
    expect(r.stderr).toContain('which Lmod misreads in Tcl modulefiles: for Lmod, write the lua format (the default)');
    const v = join(store, 'versions', '12.4.1').replace(/["\\$[\]]/g, '\\$&');
    expect(readFileSync(join(mf, 'cuda', '12.4.1'), 'utf8').split('\n')).toEqual([
      '#%Module1.0',
      '# Written by cudaenv (`cudaenv modulefiles --format tcl`); edits are overwritten.',
      'module-whatis "Name: CUDA Toolkit"',
      'module-whatis "Version: 12.4.1"',
      `module-whatis "Description: NVIDIA CUDA Toolkit 12.4.1 (${v})"`,
      `proc ModulesHelp {} { puts stderr "CUDA Toolkit 12.4.1 from the cudaenv store: ${v}" }`,
      'conflict cuda',
      `prepend-path PATH "${v}/bin"`,
      `prepend-path LD_LIBRARY_PATH "${v}/lib64"`,
      `setenv CUDA_HOME "${v}"`,
      `setenv CUDA_PATH "${v}"`,
      '',
    ]);
    expect(readFileSync(join(mf, 'cuda', '.modulerc'), 'utf8')).toBe('#%Module\n# Written by cudaenv (`cudaenv modulefiles --format tcl`); edits are overwritten.\n' +
      'module-version "cuda/11.8.0" "11"\nmodule-version "cuda/11.8.0" "11.8"\nmodule-version "cuda/12.4.1" "12"\nmodule-version "cuda/12.2.0" "12.2"\nmodule-version "cuda/12.4.1" "12.4"\n');
    expect(['11.8.0.lua', '12.2.0.lua', '12.4.1.lua', '.modulerc.lua'].filter((f) => existsSync(join(mf, 'cuda', f)))).toEqual([]);
    expect(existsSync(join(mf, 'cuda', '10.2.89.lua'))).toBe(true);
    // And back: the Tcl files go.
    const back = JSON.parse(runCli(['modulefiles', '--dir', mf, '--json'], {env}).stdout);
    expect(back.removed.sort()).toEqual([join(mf, 'cuda', '.modulerc'), ...['11.8.0', '12.2.0', '12.4.1'].map((x) => join(mf, 'cuda', x))].sort());
  });

  test('the default directory is modulefiles/ in the store', () => {
    const r = runCli(['modulefiles'], {env});
    expect(r.status).toBe(0);
    expect(existsSync(join(store, 'modulefiles', 'cuda', '12.4.1.lua'))).toBe(true);
    expect(r.stdout).toContain(`Use them with: module use ${join(store, 'modulefiles')}; module load cuda/12.4.1`);
  });
});
