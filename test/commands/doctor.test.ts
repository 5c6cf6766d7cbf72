import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {join} from 'node:path';
import {runCli} from '../helpers/cli.js';
import {makeTempDir} from '../helpers/tmp.js';
import {HAVE_GCC, PROC_OPEN, fakePython, installVersion, makeMachine, seedFailure, setGlobal, torchVersionPy, write, type Machine} from '../core/doctor/machine.js';
import {testIf} from '../helpers/skip.js';

interface Json {
  findings: Array<{id: string; severity: string; title: string; evidence: string[]; fix: string | null}>;
  facts: Record<string, any>;
}

describe('cudaenv doctor', () => {
  let tmp: {dir: string; cleanup: () => void};
  beforeAll(() => {
    tmp = makeTempDir();
  });
  afterAll(() => tmp.cleanup());

  // Nothing inherited: the machine state is entirely the constructed one.
  const run = (m: Machine, args: string[]) => runCli(['doctor', ...args], {env: m.env, cwd: m.root});

  test('a bare machine: facts, no errors, exit 0', () => {
    const m = makeMachine(join(tmp.dir, 'bare'));
    const r = run(m, ['--json']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const json = JSON.parse(r.stdout) as Json;
    expect(json.findings.map((f) => f.id).sort()).toEqual(['driver.none', 'toolkit.none']);
    for (const f of json.findings) expect(Object.keys(f).sort()).toEqual(['evidence', 'fix', 'id', 'severity', 'title']);
    expect(json.facts.driver.version).toBeNull();
    expect(json.facts.sysroot).toBe(m.sysroot);
    const human = run(m, []);
    expect(human.status).toBe(0);
    expect(human.stdout).toMatch(/^Driver +none found/m);
    expect(human.stdout).toContain('No problems found.');
  });

  test('the open kernel module driver, a matching toolkit: reported, exit 0', () => {
    const m = makeMachine(join(tmp.dir, 'open'));
    write(join(m.sysroot, 'proc/driver/nvidia/version'), PROC_OPEN);
    installVersion(m, '12.8.1');
    setGlobal(m, '12.8');
    const r = run(m, []);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Driver +575\.57\.08 \(\/proc\/driver\/nvidia\/version, open kernel module\); runs CUDA <= 12\.9\.1 fully, CUDA 12\.x via minor-version compatibility/m);
    expect(r.stdout).toMatch(/^Toolkit +CUDA 12\.8\.1 at .*versions\/12\.8\.1 \[cudaenv 12\.8\.1, set by the global default/m);
  });

  testIf(HAVE_GCC, 'needs gcc (apt-get install gcc)')('the seed failure: exit 1, the error with symbol, entry and fix in both outputs', () => {
    const m = makeMachine(join(tmp.dir, 'seed'));
    write(join(m.sysroot, 'proc/driver/nvidia/version'), PROC_OPEN);
    const old = installVersion(m, '12.3.2');
    const {oldLib, sitePackages} = seedFailure(m, old);
    torchVersionPy(sitePackages, '2.5.0+cu124', '12.4');
    const python = fakePython(m, [sitePackages], 'python-custom');
    m.env = {...m.env, LD_LIBRARY_PATH: oldLib};

    const r = run(m, ['--json', '--python', python]);
    expect(r.status).toBe(1);
    const json = JSON.parse(r.stdout) as Json;
    const f = json.findings.find((x) => x.id === 'env.ld-library-path-breaks-python');
    expect(f?.severity).toBe('error');
    expect(f!.title).toContain('__nvJitLinkComplete_12_4');
    expect(f!.title).toContain(oldLib);
    expect(f!.fix).toContain('cudaenv use 12.3.2 --ld-library-path none');
    expect(json.facts.python.interpreter).toBe(python);
    expect(json.facts.python.torch.version).toBe('2.5.0+cu124');

    const human = run(m, ['--python', python]);
    expect(human.status).toBe(1);
    expect(human.stdout).toContain(`LD_LIBRARY_PATH has CUDA libraries in ${oldLib} (CUDA 12.3.2; breaks the pip wheels)`);
    expect(human.stdout).toMatch(/^ {2}error LD_LIBRARY_PATH entry .*__nvJitLinkComplete_12_4@libnvJitLink\.so\.12$/m);
    expect(human.stdout).toMatch(/^ +fix: cudaenv use 12\.3\.2 --ld-library-path none/m);
    expect(human.stdout).toMatch(/^PyTorch +python-custom|^PyTorch +.*python-custom: torch 2\.5\.0\+cu124 \(CUDA 12\.4\)/m);
    expect(human.stdout).toMatch(/\d+ error\(s\), \d+ warning\(s\)\.$/m);
    expect(human.stdout.split('\n').length).toBeLessThan(60);
  });

  test('--python NAME without a slash is looked up on PATH', () => {
    const m = makeMachine(join(tmp.dir, 'byname'));
    const sp = join(m.root, 'venv/lib/python3.12/site-packages');
    torchVersionPy(sp, '2.5.0+cpu', null);
    const python = fakePython(m, [sp], 'python3.12');
    const r = run(m, ['--json', '--python', 'python3.12']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const json = JSON.parse(r.stdout) as Json;
    expect(json.facts.python.interpreter).toBe(python);
    expect(json.findings.map((f) => f.id)).toContain('pytorch.cpu-build');
  });

  test('bad usage: a --python that is not a program, a CUDAENV_SYSROOT that is not a directory', () => {
    const m = makeMachine(join(tmp.dir, 'usage'));
    const r = run(m, ['--python', join(m.root, 'no-such-python')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--python');
    expect(r.stderr).toContain('no-such-python');
    m.env = {...m.env, CUDAENV_SYSROOT: join(m.root, 'missing')};
    const s = run(m, []);
    expect(s.status).toBe(2);
    expect(s.stderr).toContain('CUDAENV_SYSROOT');
  });
});
