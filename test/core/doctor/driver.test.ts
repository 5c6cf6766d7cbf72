import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {mkdirSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {driverMismatchFinding, findLibcuda, readDriver} from '../../../src/core/doctor/driver.js';
import {libcudaVersion, parseProcDriverVersion} from '../../../src/core/versions/driver-version.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {PROC_OPEN, PROC_PROPRIETARY, installVersion, setGlobal, write, type Machine, makeMachine, withMachine} from './machine.js';
import {defaultDeps} from '../../../src/core/doctor/engine.js';
import {renderReport, runDoctor} from '../../../src/core/doctor/index.js';

describe('parseProcDriverVersion', () => {
  test('proprietary, open and aarch64 formats, two-part versions', () => {
    expect(parseProcDriverVersion(PROC_PROPRIETARY)).toEqual({version: '550.54.15', kernelModule: 'proprietary'});
    expect(parseProcDriverVersion(PROC_OPEN)).toEqual({version: '575.57.08', kernelModule: 'open'});
    expect(parseProcDriverVersion('NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.65.06  Release Build  (dvs-builder@U22)  Thu Jul 10 2025\n'))
      .toEqual({version: '580.65.06', kernelModule: 'open'});
    expect(parseProcDriverVersion('NVRM version: NVIDIA UNIX x86_64 Kernel Module  418.56  Fri Mar 15 12:59:26 CDT 2019\n')?.version).toBe('418.56');
    expect(parseProcDriverVersion('garbage\n')).toBeUndefined();
    expect(parseProcDriverVersion('NVRM version: NVIDIA UNIX x86_64 Kernel Module  banana\n')).toBeUndefined();
  });

  test('libcuda file names', () => {
    expect(libcudaVersion('libcuda.so.550.54.15')).toBe('550.54.15');
    expect(libcudaVersion('libcuda.so.1')).toBeUndefined();
    expect(libcudaVersion('libcuda.so')).toBeUndefined();
  });
});

describe('readDriver on a constructed root', () => {
  let m: Machine;
  withMachine('each', (made) => (m = made));

  test('/proc/driver/nvidia/version, proprietary module', () => {
    write(join(m.sysroot, 'proc/driver/nvidia/version'), PROC_PROPRIETARY);
    write(join(m.sysroot, 'sys/module/nvidia/version'), '999.1.1\n');
    expect(readDriver(m.ctx())).toEqual({version: '550.54.15', source: '/proc/driver/nvidia/version', evidence: '/proc/driver/nvidia/version', kernelModule: 'proprietary'});
  });

  test('/proc/driver/nvidia/version, open module', () => {
    write(join(m.sysroot, 'proc/driver/nvidia/version'), PROC_OPEN);
    expect(readDriver(m.ctx())).toMatchObject({version: '575.57.08', kernelModule: 'open'});
  });

  test('/sys/module/nvidia/version when /proc has none', () => {
    write(join(m.sysroot, 'sys/module/nvidia/version'), '535.104.05\n');
    expect(readDriver(m.ctx())).toMatchObject({version: '535.104.05', source: '/sys/module/nvidia/version'});
  });

  test('the libcuda.so.<version> the cache points to, then a driver directory', () => {
    const dir = join(m.sysroot, 'usr/lib/x86_64-linux-gnu');
    mkdirSync(dir, {recursive: true});
    writeFileSync(join(dir, 'libcuda.so.545.23.08'), '');
    symlinkSync('libcuda.so.545.23.08', join(dir, 'libcuda.so.1'));
    expect(readDriver(m.ctx(), '/usr/lib/x86_64-linux-gnu/libcuda.so.1')).toMatchObject({version: '545.23.08', source: 'libcuda',
      evidence: '/usr/lib/x86_64-linux-gnu/libcuda.so.1 -> /usr/lib/x86_64-linux-gnu/libcuda.so.545.23.08'});
    // Without a cache hint the well-known directory is looked at.
    expect(readDriver(m.ctx())).toMatchObject({version: '545.23.08', source: 'libcuda'});
  });

  test('nvidia-smi on PATH as the last resort, and nothing at all', () => {
    expect(readDriver(m.ctx())).toBeUndefined();
    write(join(m.bin, 'nvidia-smi'), '#!/bin/sh\n[ "$1" = "--query-gpu=driver_version" ] && [ "$2" = "--format=csv,noheader" ] && echo 570.124.06\n', 0o755);
    expect(readDriver(m.ctx())).toMatchObject({version: '570.124.06', source: 'nvidia-smi'});
  });

  test('a kernel module and a libcuda of different versions is an error: reboot', () => {
    write(join(m.sysroot, 'proc/driver/nvidia/version'), PROC_PROPRIETARY);
    const dir = join(m.sysroot, 'usr/lib/x86_64-linux-gnu');
    mkdirSync(dir, {recursive: true});
    writeFileSync(join(dir, 'libcuda.so.550.90.07'), '');
    symlinkSync('libcuda.so.550.90.07', join(dir, 'libcuda.so.1'));
    const f = driverMismatchFinding(readDriver(m.ctx()), findLibcuda(m.ctx(), undefined));
    expect(f).toMatchObject({id: 'driver.library-mismatch', severity: 'error'});
    expect(f!.title).toContain('550.54.15');
    expect(f!.title).toContain('550.90.07');
    expect(f!.fix).toContain('Reboot');
    writeFileSync(join(dir, 'libcuda.so.550.54.15'), '');
    symlinkSync('libcuda.so.550.54.15', join(dir, 'libcuda.so.1.tmp'));
    expect(driverMismatchFinding(readDriver(m.ctx()), findLibcuda(m.ctx(), '/usr/lib/x86_64-linux-gnu/libcuda.so.1.tmp'))).toBeUndefined();
  });
});

describe('a user-space libcuda without a kernel module', () => {
  let tmp: {dir: string; cleanup: () => void};
  let m: Machine;
  beforeEach(() => {
    tmp = makeTempDir();
    m = makeMachine(tmp.dir);
    const dir = join(m.sysroot, 'usr/lib/x86_64-linux-gnu');
    mkdirSync(dir, {recursive: true});
    writeFileSync(join(dir, 'libcuda.so.470.256.02'), '');
    symlinkSync('libcuda.so.470.256.02', join(dir, 'libcuda.so.1'));
    // An active toolkit far too new for that libcuda: without a module there is no driver to compare with.
    installVersion(m, '12.4.1');
    setGlobal(m, '12.4.1');
  });
  afterEach(() => tmp.cleanup());

  test('is no working driver: doctor says no kernel module is loaded, and compares no versions', async () => {
    expect(readDriver(m.ctx())).toMatchObject({version: '470.256.02', source: 'libcuda', kernelModuleLoaded: false});
    const report = await runDoctor(m.ctx(), defaultDeps);
    const ids = report.findings.map((f) => f.id);
    const f = report.findings.find((x) => x.id === 'driver.no-kernel-module');
    expect(f).toMatchObject({severity: 'error'});
    expect(f!.title).toContain('470.256.02 is installed but no NVIDIA kernel module is loaded');
    expect(f!.fix).toContain('sudo modprobe nvidia');
    expect(ids).not.toContain('driver.too-old-for-toolkit');
    expect(ids).not.toContain('driver.none');
    expect(report.facts.driver).toMatchObject({version: '470.256.02', source: 'libcuda', kernelModuleLoaded: false});
    expect(renderReport(report)).toContain('no NVIDIA kernel module loaded');
  });

  test('a loaded module whose version file cannot be read, or WSL2\'s /dev/dxg, is a kernel side', async () => {
    mkdirSync(join(m.sysroot, 'sys/module/nvidia'), {recursive: true});
    expect(readDriver(m.ctx())).toMatchObject({kernelModuleLoaded: true});
    const report = await runDoctor(m.ctx(), defaultDeps);
    expect(report.findings.map((f) => f.id)).toContain('driver.too-old-for-toolkit');
    expect(report.findings.map((f) => f.id)).not.toContain('driver.no-kernel-module');
    const wsl = makeMachine(join(tmp.dir, 'wsl'));
    write(join(wsl.sysroot, 'dev/dxg'), '');
    write(join(wsl.sysroot, 'usr/lib/wsl/lib/libcuda.so.1.1'), '');
    writeFileSync(join(wsl.sysroot, 'usr/lib/wsl/lib/libcuda.so.555.42.02'), '');
    expect(readDriver(wsl.ctx())).toMatchObject({version: '555.42.02', kernelModuleLoaded: true});
  });
});
