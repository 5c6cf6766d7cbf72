import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {mkdirSync, readlinkSync, readdirSync, rmSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {pathsFor, storeRoot, type StorePaths} from '../../../src/core/store/paths.js';
import {listVersions, refreshResolveIndex} from '../../../src/core/store/registry.js';
import {loadSettings} from '../../../src/core/store/settings.js';
import {makeTempDir} from '../../helpers/tmp.js';

let dir: string;
let cleanup: () => void;
let paths: StorePaths;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
  paths = pathsFor(join(dir, 'store'));
});
afterEach(() => cleanup());

describe('store', () => {
  test('root: CUDAENV_DIR, else ~/.cudaenv', () => {
    expect(storeRoot({CUDAENV_DIR: '/shared/cudaenv'})).toBe('/shared/cudaenv');
    expect(storeRoot({HOME: '/home/u'})).toBe('/home/u/.cudaenv');
  });

  test('versions list installed directories and registered links, ignoring staging leftovers', () => {
    mkdirSync(join(paths.versions, '12.4.1', 'bin'), {recursive: true});
    mkdirSync(join(paths.versions, '.12.5.0.staging'), {recursive: true});
    writeFileSync(join(paths.versions, 'README'), 'x');
    const ext = join(dir, 'cuda-11.8');
    mkdirSync(ext);
    symlinkSync(ext, join(paths.versions, '11.8.0'));
    symlinkSync(join(dir, 'gone'), join(paths.versions, '10.2.89'));
    expect(listVersions(paths).map((v) => [v.label, v.kind, v.broken])).toEqual([
      ['10.2.89', 'registered', true], ['11.8.0', 'registered', false], ['12.4.1', 'installed', false],
    ]);
  });

  test('the resolve index maps every prefix to its highest version and drops stale links', () => {
    for (const v of ['11.8.0', '12.3.2', '12.4.0', '12.4.1']) mkdirSync(join(paths.versions, v, 'bin'), {recursive: true});
    refreshResolveIndex(paths);
    const link = (k: string) => readlinkSync(join(paths.resolve, k));
    expect(link('12')).toBe('../versions/12.4.1');
    expect(link('12.3')).toBe('../versions/12.3.2');
    expect(link('12.4.0')).toBe('../versions/12.4.0');
    expect(link('11')).toBe('../versions/11.8.0');
    expect(link('latest')).toBe('../versions/12.4.1');
    cleanupVersion('11.8.0');
    refreshResolveIndex(paths);
    expect(readdirSync(paths.resolve).sort()).toEqual(['12', '12.3', '12.3.2', '12.4', '12.4.0', '12.4.1', 'latest']);
  });

  test('a suffixed label (12.4.1-local) is listed after its release and gets its own resolve link only', () => {
    for (const v of ['12.4.1', '12.4.1-local', '12.9.0-zz', '12.4.1-Local', '12.4.1-']) mkdirSync(join(paths.versions, v, 'bin'), {recursive: true});
    expect(listVersions(paths).map((v) => v.label)).toEqual(['12.4.1', '12.4.1-local', '12.9.0-zz']);
    refreshResolveIndex(paths);
    expect(readdirSync(paths.resolve).sort()).toEqual(['12', '12.4', '12.4.1', '12.4.1-local', '12.9.0-zz', 'latest']);
    for (const k of ['12', '12.4', '12.4.1', 'latest']) expect([k, readlinkSync(join(paths.resolve, k))]).toEqual([k, '../versions/12.4.1']);
    expect(readlinkSync(join(paths.resolve, '12.4.1-local'))).toBe('../versions/12.4.1-local');
  });

  test('a corrupted settings file is named in the error', async () => {
    mkdirSync(paths.root, {recursive: true});
    writeFileSync(paths.configFile, '{"mirror": ');
    await expect(loadSettings(paths)).rejects.toThrow(`the settings file ${paths.configFile} is not valid JSON`);
    writeFileSync(paths.configFile, '{"ldLibraryPath": "sometimes"}');
    const settings = await loadSettings(paths);
    expect(() => settings.get('ldLibraryPath')).toThrow(/has an invalid value "sometimes"/);
  });
});

function cleanupVersion(label: string): void {
  // Remove like uninstall would: the directory goes, the index is refreshed after.
  rmSync(join(paths.versions, label), {recursive: true});
}
