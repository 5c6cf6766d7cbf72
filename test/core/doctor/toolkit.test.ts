import {describe, expect, test} from '@jest/globals';
import {mkdirSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {driverFindings, findForwardCompat} from '../../../src/core/doctor/compat.js';
import {condaFindings} from '../../../src/core/doctor/conda.js';
import {readDriver} from '../../../src/core/doctor/driver.js';
import {defaultDeps} from '../../../src/core/doctor/engine.js';
import {runDoctor} from '../../../src/core/doctor/index.js';
import {inspectToolkits} from '../../../src/core/doctor/toolkit.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import type {TempDir} from '../../helpers/tmp.js';
import {PROC_PROPRIETARY, installVersion, setGlobal, write, type Machine, withMachine} from './machine.js';

describe('the active selection', () => {
  let tmp: TempDir;
  let m: Machine;
  withMachine('each', (made, dir) => ([m, tmp] = [made, dir]));

  test('a selected version that is not installed is an error with the install command', () => {
    write(join(m.root, '.cuda-version'), '12.6\n');
    const s = inspectToolkits(m.ctx());
    expect(s.findings).toEqual([
      expect.objectContaining({id: 'toolkit.not-installed', severity: 'error', fix: expect.stringContaining('cudaenv install 12.6')}),
      expect.objectContaining({id: 'toolkit.none', severity: 'info'}),
    ]);
    expect(s.selection).toMatchObject({spec: '12.6', installed: false, origin: `set by ${join(m.root, '.cuda-version')}`});
  });

  test('a selected version that is not installed but on the machine, unregistered: the fix is the `cudaenv add` of its directory', () => {
    write(join(m.root, '.cuda-version'), '12.6\n');
    // /usr/local/cuda-12.6 and /usr/local/cuda -> it in the machine's image; nothing registered.
    makeFakeToolkit(join(m.sysroot, 'usr', 'local', 'cuda-12.6'), {version: '12.6.3'});
    symlinkSync('/usr/local/cuda-12.6', join(m.sysroot, 'usr', 'local', 'cuda'));
    const s = inspectToolkits(m.ctx());
    expect(s.findings[0]).toMatchObject({
      id: 'toolkit.not-installed', severity: 'error',
      evidence: [`12.6 (set by ${join(m.root, '.cuda-version')})`, 'CUDA 12.6.3 is at /usr/local/cuda-12.6, not registered'],
      fix: 'cudaenv add /usr/local/cuda-12.6 (it registers the toolkit this machine has), or cudaenv install 12.6',
    });
  });

  test('an unreadable selection is an error that names it; version file warnings pass through', () => {
    m.env = {...m.env, CUDAENV_VERSION: '12.4; rm -rf /'};
    const bad = inspectToolkits(m.ctx());
    expect(bad.findings[0]).toMatchObject({id: 'toolkit.selection-invalid', severity: 'error'});
    expect(bad.findings[0]!.evidence.join('\n')).toContain('CUDAENV_VERSION');
    m.env = {...m.env, CUDAENV_VERSION: undefined};
    installVersion(m, '12.4.1');
    write(join(m.root, '.cuda-version'), '12.4\nfrobnicate=1\n');
    const warned = inspectToolkits(m.ctx());
    expect(warned.findings.map((f) => [f.id, f.severity])).toEqual([['toolkit.version-file-warning', 'warning']]);
    expect(warned.active).toMatchObject({source: 'cudaenv', label: '12.4.1', version: '12.4.1'});
  });

  test('nvcc on PATH: the real file\'s toolkit, or the toolkit a wrapper script hands over to', () => {
    const tk = makeFakeToolkit(join(tmp.dir, 'opt/cuda-12.6'), {version: '12.6.3'});
    write(join(m.bin, 'nvcc'), `#!/bin/sh\nexec ${join(tk, 'bin', 'nvcc')} "$@"\n`, 0o755);
    expect(inspectToolkits(m.ctx()).active).toMatchObject({source: 'nvcc on PATH', real: tk, version: '12.6.3'});
    const links = join(tmp.dir, 'links');
    mkdirSync(links);
    symlinkSync(join(tk, 'bin', 'nvcc'), join(links, 'nvcc'));
    m.env = {...m.env, PATH: links};
    expect(inspectToolkits(m.ctx()).nvcc).toMatchObject({path: join(links, 'nvcc'), shim: false, toolkit: {real: tk, version: '12.6.3'}});
  });

  test('a toolkit newer than the driver table is said as such', () => {
    write(join(m.sysroot, 'proc/driver/nvidia/version'), PROC_PROPRIETARY);
    installVersion(m, '13.9.0');
    setGlobal(m, '13.9');
    const ctx = m.ctx();
    const s = inspectToolkits(ctx);
    const [f] = driverFindings(ctx, readDriver(ctx), s.active, findForwardCompat(ctx, s.active));
    // Its own minimum is not known, but it is at least the newest row's, and 550 is below even CUDA 13's floor.
    expect(f).toMatchObject({id: 'driver.too-old-for-toolkit', severity: 'error', title: expect.stringContaining('CUDA 13.9.0 needs NVIDIA driver >= 610.43.02 at least (13.3.1\'s minimum: it is newer than every release in cudaenv\'s driver table')});
  });

  test('a conda hook without a version is flagged for reinstalling', () => {
    const prefix = join(tmp.dir, 'envs/x');
    write(join(prefix, 'etc/conda/activate.d/50-cudaenv.sh'), 'echo hello\n');
    m.env = {...m.env, CONDA_PREFIX: prefix};
    const ctx = m.ctx();
    expect(condaFindings(ctx, inspectToolkits(ctx)).findings).toEqual([expect.objectContaining({id: 'conda.hook-unreadable', severity: 'warning'})]);
  });

  test('an interpreter that reports no site-packages is said, and nothing else is assumed', async () => {
    write(join(m.bin, 'python3'), '#!/bin/sh\nexit 3\n', 0o755);
    const report = await runDoctor(m.ctx(), defaultDeps);
    expect(report.findings.find((f) => f.id === 'pytorch.no-site-packages')?.severity).toBe('info');
    expect(report.facts.python).toEqual({interpreter: join(m.bin, 'python3'), program: null, sitePackages: [], cudaLibraryDirs: [], torch: null});
  });
});
