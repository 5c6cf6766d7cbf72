import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {driverFacts, driverFindings, findForwardCompat} from '../../../src/core/doctor/compat.js';
import {readDriver} from '../../../src/core/doctor/driver.js';
import {driverNewerThanTable, driverSupport, driverTableNewest, minimumDriver, newerThanDriverTable} from '../../../src/core/versions/driver-table.js';
import {inspectToolkits} from '../../../src/core/doctor/toolkit.js';
import {tableAge, tableAgeNotes} from '../../../src/core/doctor/table-age.js';
import {newerThanTable, tableRange} from '../../../src/core/versions/releases.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {installVersion, makeMachine, setGlobal, write, type Machine} from './machine.js';

/**
 * Issue 36, item 3: the tables cudaenv carries say how old they are. A toolkit or driver newer
 * than every row is said as such, never measured against the last row as if it were its own.
 */

const proc = (version: string): string => `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  ${version}  Release Build  (dvs-builder@U22)  Wed Sep  9 2026\nGCC version:  gcc version 12.2.0\n`;

describe('the driver table\'s edge', () => {
  test('its newest row is 13.3.1; a release after it gets that row\'s minimum as a lower bound, never as its own', () => {
    expect(driverTableNewest()).toEqual({toolkit: '13.3.1', driver: '610.43.02'});
    expect(minimumDriver('13.3.1')).toEqual({driver: '610.43.02', row: '13.3.1'});
    expect(minimumDriver('13.3.2')).toEqual({driver: '610.43.02', row: '13.3.1', atLeast: true});
    expect(minimumDriver('14.0.0')).toEqual({driver: '610.43.02', row: '13.3.1', atLeast: true});
    expect(newerThanDriverTable('13.3.1')).toBe(false);
    expect(newerThanDriverTable('13.4')).toBe(true);
    expect(driverNewerThanTable('610.43.02')).toBe(false);
    expect(driverNewerThanTable('620.10.01')).toBe(true);
  });

  test('support of a newer release: unknown when the driver meets the newest row, otherwise measured against that lower bound', () => {
    expect(driverSupport('620.10.01', '13.4.1')).toMatchObject({kind: 'unknown', required: {atLeast: true, row: '13.3.1'}, floor: '580.65.06'});
    expect(driverSupport('595.58.03', '13.4.1')).toMatchObject({kind: 'minor-version-compatibility', required: {atLeast: true}});
    expect(driverSupport('550.54.15', '13.4.1')).toMatchObject({kind: 'too-old', required: {atLeast: true}});
    expect(driverSupport('620.10.01', '13.3.1')).toMatchObject({kind: 'full'});
  });
});

describe('doctor on a machine newer than the tables', () => {
  let tmp: {dir: string; cleanup: () => void};
  let m: Machine;
  beforeEach(() => {
    tmp = makeTempDir();
    m = makeMachine(tmp.dir);
  });
  afterEach(() => tmp.cleanup());

  test('a driver newer than the table, a toolkit newer than both tables: each said, no guess from the last row', () => {
    write(`${m.sysroot}/proc/driver/nvidia/version`, proc('620.10.01'));
    installVersion(m, '13.4.1');
    setGlobal(m, '13.4');
    const ctx = m.ctx();
    const state = inspectToolkits(ctx);
    expect(state.findings).toEqual([expect.objectContaining({
      id: 'toolkit.newer-than-release-table', severity: 'info',
      title: `CUDA 13.4.1 is newer than every release in cudaenv's release table (${tableRange().oldest} to ${tableRange().newest}): a toolkit of it without version.json is named from the mirror's manifests, not from the table`,
      fix: expect.stringContaining('node scripts/gen-release-table.mjs --mirror URL'),
    })]);
    const driver = readDriver(ctx);
    const findings = driverFindings(ctx, driver, state.active, findForwardCompat(ctx, state.active));
    expect(findings.map((f) => [f.id, f.severity])).toEqual([['driver.newer-than-table', 'info'], ['driver.toolkit-unknown', 'info']]);
    expect(findings[0]!.title).toBe('Driver 620.10.01 is newer than every driver in cudaenv\'s driver table (CUDA 10.0.0 to 13.3.1; 13.3.1 needs >= 610.43.02): it fully supports CUDA 13.3.1 and may support newer releases the table does not list');
    expect(findings[1]!.title).toBe('CUDA 13.4.1 is newer than every release in cudaenv\'s driver table (newest 13.3.1, which needs driver >= 610.43.02): its own minimum driver is not known; driver 620.10.01 meets 13.3.1\'s');
    expect(driverFacts(driver, [])).toMatchObject({newestFullySupported: '13.3.1', newerThanDriverTable: true});
  });

  test('a toolkit newer than the driver table on a driver below its newest row: minor-version compatibility at best, with the lower bound said', () => {
    write(`${m.sysroot}/proc/driver/nvidia/version`, proc('595.58.03'));
    installVersion(m, '13.4.1');
    setGlobal(m, '13.4');
    const ctx = m.ctx();
    const state = inspectToolkits(ctx);
    const findings = driverFindings(ctx, readDriver(ctx), state.active, findForwardCompat(ctx, state.active));
    expect(findings).toEqual([expect.objectContaining({
      id: 'driver.minor-version-compatibility', severity: 'warning',
      title: 'CUDA 13.4.1 runs on driver 595.58.03 only through minor-version compatibility (full support needs >= 610.43.02 at least (13.3.1\'s minimum: it is newer than every release in cudaenv\'s driver table, so its own is not known))',
    })]);
    expect(driverFacts(readDriver(ctx), [])).toMatchObject({newerThanDriverTable: false});
  });

  test('a toolkit the tables know: nothing said about their age', () => {
    write(`${m.sysroot}/proc/driver/nvidia/version`, proc('580.95.05'));
    installVersion(m, '13.0.2');
    setGlobal(m, '13.0');
    const ctx = m.ctx();
    const state = inspectToolkits(ctx);
    expect(state.findings).toEqual([]);
    expect(driverFindings(ctx, readDriver(ctx), state.active, findForwardCompat(ctx, state.active))).toEqual([]);
  });
});

describe('ls-remote\'s notes on the tables', () => {
  test('releases newer than the release table and the driver table are named', () => {
    expect(newerThanTable('13.0.2')).toBe(false);
    const age = tableAge(['12.4.1', '13.0.2', '13.1.0', '13.3.1', '13.4.0', '13.4.1']);
    expect(age).toEqual({
      release_table: {oldest: tableRange().oldest, newest: '13.0.2', newer: ['13.1.0', '13.3.1', '13.4.0', '13.4.1']},
      driver_table: {newest: '13.3.1', newer: ['13.4.0', '13.4.1']},
    });
    expect(tableAgeNotes(age)).toEqual([
      `4 releases, 13.1.0 to 13.4.1, are newer than cudaenv's release table (${tableRange().oldest} to 13.0.2): a toolkit of them installed without cudaenv is named from this mirror's manifests (cudaenv add reads them)`,
      '13.4.0 and 13.4.1 are newer than cudaenv\'s driver table (to 13.3.1): their minimum driver is not known to cudaenv (doctor checks them against 13.3.1\'s as a lower bound)',
    ]);
    expect(tableAgeNotes(tableAge(['12.4.1', '13.0.2']))).toEqual([]);
  });
});
