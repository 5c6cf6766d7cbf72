import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {pathsFor, type StorePaths} from '../../../src/core/store/paths.js';
import {writeAlias, writeGlobal} from '../../../src/core/store/registry.js';
import {describeOrigin, requireSelection, selectVersion} from '../../../src/core/selection/select.js';
import {makeTempDir} from '../../helpers/tmp.js';

let dir: string;
let cleanup: () => void;
let paths: StorePaths;
let project: string;

beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
  paths = pathsFor(join(dir, 'store'));
  for (const v of ['11.8.0', '12.3.2', '12.4.0', '12.4.1']) mkdirSync(join(paths.versions, v, 'bin'), {recursive: true});
  project = join(dir, 'proj');
  mkdirSync(join(project, 'sub'), {recursive: true});
});
afterEach(() => cleanup());

describe('selection precedence', () => {
  test('system when nothing is chosen', () => {
    const sel = selectVersion(paths, {cwd: project, env: {}});
    expect(sel).toMatchObject({system: true, origin: {kind: 'default'}});
  });

  test('global default < .cuda-version < CUDAENV_VERSION', () => {
    writeGlobal(paths, '11');
    expect(selectVersion(paths, {cwd: join(project, 'sub'), env: {}})).toMatchObject({label: '11.8.0', origin: {kind: 'global'}});
    writeFileSync(join(project, '.cuda-version'), '12.4\n');
    const byFile = selectVersion(paths, {cwd: join(project, 'sub'), env: {}});
    expect(byFile).toMatchObject({label: '12.4.1', origin: {kind: 'file', path: join(project, '.cuda-version')}});
    expect(describeOrigin(byFile.origin)).toBe(`set by ${join(project, '.cuda-version')}`);
    expect(selectVersion(paths, {cwd: join(project, 'sub'), env: {CUDAENV_VERSION: '12.3'}})).toMatchObject({label: '12.3.2', origin: {kind: 'env'}});
    expect(selectVersion(paths, {cwd: join(project, 'sub'), env: {CUDAENV_VERSION: ''}})).toMatchObject({label: '12.4.1'});
  });

  test('aliases resolve, and loops are reported', () => {
    writeAlias(paths, 'stable', '12.3');
    writeAlias(paths, 'prod', 'stable');
    expect(selectVersion(paths, {cwd: project, env: {CUDAENV_VERSION: 'prod'}})).toMatchObject({label: '12.3.2', aliases: ['prod', 'stable']});
    writeAlias(paths, 'stable', 'prod');
    expect(() => selectVersion(paths, {cwd: project, env: {CUDAENV_VERSION: 'prod'}})).toThrow(/alias prod loops \(prod -> stable -> prod\)/);
  });

  test('a version that is not installed is selected but flagged', () => {
    writeFileSync(join(project, '.cuda-version'), '12.9\n');
    const sel = selectVersion(paths, {cwd: project, env: {}});
    expect(sel.label).toBeUndefined();
    expect(sel.system).toBe(false);
    expect(() => requireSelection(paths, {cwd: project, env: {}})).toThrow(/CUDA 12.9 \(set by .*\.cuda-version\) is not installed/);
  });

  test('a hostile CUDAENV_VERSION is refused, naming the variable', () => {
    expect(() => selectVersion(paths, {cwd: project, env: {CUDAENV_VERSION: '$(id)'}})).toThrow(/CUDAENV_VERSION holds "\$\(id\)" is not a CUDA version spec/);
  });
});
