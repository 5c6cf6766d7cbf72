import {describe, expect, test} from '@jest/globals';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {driverFindings, findForwardCompat} from '../../../src/core/doctor/compat.js';
import {readDriver} from '../../../src/core/doctor/driver.js';
import {inspectToolkits} from '../../../src/core/doctor/toolkit.js';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {PROC_PROPRIETARY, installVersion, setGlobal, systemToolkit, write, type Machine, withMachine} from './machine.js';

function findingsFor(m: Machine) {
  const ctx = m.ctx();
  const state = inspectToolkits(ctx);
  const driver = readDriver(ctx);
  return driverFindings(ctx, driver, state.active, findForwardCompat(ctx, state.active));
}

describe('active toolkit against the driver', () => {
  let m: Machine;
  withMachine('each', (made) => (m = made));

  const driver = (version: string) => write(join(m.sysroot, 'proc/driver/nvidia/version'), PROC_PROPRIETARY.replace('550.54.15', version));

  test('a fully supported toolkit gives no finding', () => {
    driver('550.54.15');
    installVersion(m, '12.4.1');
    setGlobal(m, '12.4');
    expect(findingsFor(m)).toEqual([]);
  });

  test('no driver is an info fact, not an error', () => {
    installVersion(m, '12.4.1');
    setGlobal(m, '12.4');
    const f = findingsFor(m);
    expect(f).toHaveLength(1);
    expect(f[0]).toMatchObject({id: 'driver.none', severity: 'info'});
  });

  test('relying on minor-version compatibility is a warning naming the PTX JIT limit', () => {
    driver('535.104.05');
    installVersion(m, '12.4.1');
    setGlobal(m, '12.4');
    const [f] = findingsFor(m);
    expect(f).toMatchObject({id: 'driver.minor-version-compatibility', severity: 'warning'});
    expect(f!.title).toContain('550.54.15');
    expect(f!.evidence.join('\n')).toContain('JIT');
    expect(f!.fix).toContain('cudaenv install 12.2.2 && cudaenv use 12.2.2');
    expect(f!.fix).not.toContain('cudaenv use 12.4.1'); // not the version already active
  });

  test('a driver too old for the toolkit is an error naming both and the newest toolkit that works', () => {
    driver('470.82.01');
    installVersion(m, '12.4.1');
    installVersion(m, '11.8.0');
    setGlobal(m, '12.4');
    const [f] = findingsFor(m);
    expect(f).toMatchObject({id: 'driver.too-old-for-toolkit', severity: 'error'});
    expect(f!.title).toContain('CUDA 12.4.1');
    expect(f!.title).toContain('550.54.15');
    expect(f!.title).toContain('470.82.01');
    expect(f!.evidence.join('\n')).toContain('the newest CUDA this driver fully supports: 11.4.4');
    expect(f!.evidence.join('\n')).toContain('the newest installed version that works: 11.8.0 (minor-version compatibility)');
    expect(f!.fix).toContain('cudaenv use 11.8.0');
  });

  test('a present cuda-compat library is reported and offered; once on LD_LIBRARY_PATH it carries the toolkit', () => {
    driver('535.104.05');
    const tk = systemToolkit(m, '12.8.1', true);
    const compat = join(tk, 'compat');
    mkdirSync(compat);
    writeFileSync(join(compat, 'libcuda.so.570.124.06'), '');
    let f = findingsFor(m);
    expect(f.map((x) => x.id)).toEqual(['driver.forward-compat', 'driver.minor-version-compatibility']);
    expect(f[0]!.title).toContain('570.124.06');
    expect(f[0]!.title).toContain('not on LD_LIBRARY_PATH');
    m.env = {...m.env, LD_LIBRARY_PATH: compat};
    f = findingsFor(m);
    expect(f.map((x) => x.id)).toEqual(['driver.forward-compat', 'driver.forward-compat-in-use']);
    expect(f[1]!.severity).toBe('warning');
  });

  test('the compat fix quotes a toolkit path with spaces and quotes', () => {
    driver('470.82.01');
    // The active toolkit through CUDA_HOME, in a directory whose name needs quoting.
    const tk = makeFakeToolkit(join(m.sysroot, "opt/my cuda's 12.4"), {version: '12.4.1'});
    m.env = {...m.env, CUDA_HOME: tk};
    mkdirSync(join(tk, 'compat'));
    writeFileSync(join(tk, 'compat', 'libcuda.so.550.54.15'), '');
    const f = findingsFor(m).find((x) => x.id === 'driver.too-old-for-toolkit');
    expect(f!.fix).toContain(`export LD_LIBRARY_PATH='/opt/my cuda'\\''s 12.4/compat'\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}`);
  });

  test('a toolkit too new, with a compat library present but unused, offers it in the fix', () => {
    driver('470.82.01');
    const tk = systemToolkit(m, '12.4.1', true);
    mkdirSync(join(tk, 'compat'));
    writeFileSync(join(tk, 'compat', 'libcuda.so.550.54.15'), '');
    const f = findingsFor(m).find((x) => x.id === 'driver.too-old-for-toolkit');
    expect(f?.severity).toBe('error');
    expect(f!.title).toContain('(/usr/local/cuda)');
    expect(f!.fix).toContain(`export LD_LIBRARY_PATH=/usr/local/cuda-12.4/compat`);
  });
});
