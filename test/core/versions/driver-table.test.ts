import {describe, expect, test} from '@jest/globals';
import {
  compareDriverVersions, driverSupport, minimumDriver, newestFullySupported, newestMajorViaMvc, mvcFloor,
} from '../../../src/core/versions/driver-table.js';

describe('driver table', () => {
  test('exact rows and labels between rows', () => {
    expect(minimumDriver('12.4.1')).toEqual({driver: '550.54.15', row: '12.4.1'});
    expect(minimumDriver('12.4.0')?.driver).toBe('550.54.14');
    expect(minimumDriver('12.3.2')).toEqual({driver: '545.23.08', row: '12.3.2'});
    expect(minimumDriver('12.2.5')).toEqual({driver: '535.104.05', row: '12.2.2'});
    expect(minimumDriver('11.6.2')?.driver).toBe('510.47.03');
    expect(minimumDriver('12.4')?.driver).toBe('550.54.14');
    expect(minimumDriver('13.0.0')?.driver).toBe('580.65.06');
    expect(minimumDriver('12.7.0')).toBeUndefined(); // never released
    expect(minimumDriver('14.0.0')).toMatchObject({row: '13.3.1', atLeast: true}); // newer than the table: a lower bound
    expect(minimumDriver('nonsense')).toBeUndefined();
  });

  test('driver versions compare part by part, with two-part versions', () => {
    expect(compareDriverVersions('570.26', '570.124.06')).toBeLessThan(0);
    expect(compareDriverVersions('455.32', '455.23')).toBeGreaterThan(0);
    expect(compareDriverVersions('525.60.13', '525.60.13')).toBe(0);
    expect(compareDriverVersions('418.56', '418.39')).toBeGreaterThan(0);
  });

  test('newest toolkit a driver supports, fully and through minor-version compatibility', () => {
    expect(newestFullySupported('535.104.05')).toBe('12.2.2');
    expect(newestFullySupported('550.54.15')).toBe('12.4.1');
    expect(newestFullySupported('575.57.08')).toBe('12.9.1');
    expect(newestFullySupported('400.10')).toBeUndefined();
    expect(newestMajorViaMvc('535.104.05')).toBe(12);
    expect(newestMajorViaMvc('470.82.01')).toBe(11);
    expect(newestMajorViaMvc('580.65.06')).toBe(13);
    expect(mvcFloor(10)).toBeUndefined();
  });

  test('support kinds', () => {
    expect(driverSupport('550.54.15', '12.4.1').kind).toBe('full');
    expect(driverSupport('535.104.05', '12.4.1')).toMatchObject({kind: 'minor-version-compatibility', floor: '525.60.13'});
    expect(driverSupport('470.82.01', '12.4.1')).toMatchObject({kind: 'too-old', required: {driver: '550.54.15'}, floor: '525.60.13'});
    expect(driverSupport('440.33', '10.2.89')).toMatchObject({kind: 'full'});
    expect(driverSupport('418.39', '10.2.89')).toMatchObject({kind: 'too-old'});
    expect(driverSupport('610.43.02', '13.9.0').kind).toBe('unknown');
  });
});
