import {afterEach, describe, expect, test} from '@jest/globals';
import {mkdirSync, readFileSync, utimesSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import type {Receipt} from '../../src/core/remote/install.js';
import {directoryCacheService, entryName} from '../../src/action/cache-service.js';
import {findInToolCache, receiptCovers} from '../../src/action/selection.js';
import {pathsFor} from '../../src/core/store/paths.js';
import {makeTempDir} from '../helpers/tmp.js';

function receipt(over: Partial<Receipt>): Receipt {
  const c = (name: string) => ({name, version: '1', sha256: 'x'.repeat(64), size: 1, relative_path: `${name}/x.tar.xz`});
  return {
    release: '12.4.1', release_date: null, platform: 'linux-x86_64', profile: 'devel', mirror: 'm', installed_at: '',
    components: ['cuda_nvcc', 'cuda_cudart', 'cuda_cccl', 'libcublas'].map(c), cudnn: null, ...over,
  };
}

describe('receiptCovers: an installed toolkit serves a step that asks for no more than it holds', () => {
  test.each([
    ['devel serves the default request', {}, {spec: '12.4'}, true],
    ['devel serves minimal', {}, {spec: '12.4', profile: 'minimal' as const}, true],
    ['minimal does not serve devel', {profile: 'minimal'}, {spec: '12.4', profile: 'devel' as const}, false],
    ['a components-only install serves no profile', {profile: null}, {spec: '12.4'}, false],
    ['short and full component names', {profile: null}, {spec: '12.4', components: ['nvcc', 'cuda_cudart', 'cublas']}, true],
    ['a missing component', {}, {spec: '12.4', components: ['cufft']}, false],
    ['another platform', {platform: 'linux-sbsa'}, {spec: '12.4', components: ['nvcc']}, false],
    ['cuDNN asked for, none installed', {}, {spec: '12.4', cudnn: '9'}, false],
    ['cuDNN 9.1.0 serves cudnn: 9', {cudnn: {...receipt({}).components[0]!, name: 'cudnn', release: '9.1.0', variant: 'cuda12', mirror: 'm'}}, {spec: '12.4', cudnn: '9'}, true],
    ['cuDNN 9.1.0 does not serve cudnn: 8', {cudnn: {...receipt({}).components[0]!, name: 'cudnn', release: '9.1.0', variant: 'cuda12', mirror: 'm'}}, {spec: '12.4', cudnn: '8'}, false],
  ])('%s', (_name, over, req, covers) => {
    expect(receiptCovers(receipt(over as Partial<Receipt>), 'linux-x86_64', req)).toBe(covers);
  });
});

describe('the tool cache and the directory cache service', () => {
  let tmp: ReturnType<typeof makeTempDir> | undefined;
  afterEach(() => tmp?.cleanup());

  test('findInToolCache takes the newest matching toolkit that covers the request, without the network', () => {
    tmp = makeTempDir();
    const paths = pathsFor(join(tmp.dir, 'cudaenv'));
    for (const [label, profile] of [['12.4.0', 'devel'], ['12.4.1', 'minimal'], ['12.6.0', 'full']] as const) {
      mkdirSync(join(paths.versions, label, 'bin'), {recursive: true});
      writeFileSync(join(paths.versions, label, '.cudaenv-receipt.json'), JSON.stringify(receipt({release: label, profile})));
    }
    expect(findInToolCache(paths, 'linux-x86_64', {spec: '12.4'})?.label).toBe('12.4.0');
    expect(findInToolCache(paths, 'linux-x86_64', {spec: '12.4', profile: 'minimal'})?.label).toBe('12.4.1');
    expect(findInToolCache(paths, 'linux-x86_64', {spec: '12'})?.label).toBe('12.6.0');
    expect(findInToolCache(paths, 'linux-x86_64', {spec: '11'})).toBeUndefined();
  });

  test('restore: the exact key, else the newest entry under a restore key; save: entries are immutable', async () => {
    tmp = makeTempDir();
    const root = join(tmp.dir, 'cache');
    const service = directoryCacheService(root);
    expect(await service.unavailable()).toMatch(/cache directory .* does not exist/);
    mkdirSync(root);
    expect(await service.unavailable()).toBeUndefined();
    const save = async (key: string, text: string, mtime: number): Promise<void> => {
      const dir = join(tmp!.dir, 'src');
      mkdirSync(dir, {recursive: true});
      writeFileSync(join(dir, 'f'), text);
      expect(await service.save(dir, key)).toBe(true);
      utimesSync(join(root, entryName(key)), mtime, mtime);
    };
    await save('p-a', 'old', 1000);
    await save('p-b', 'new', 2000);
    await save('q/x y', 'other', 3000);
    await save('q~2Fx y', 'tilde', 3000);
    const out = join(tmp.dir, 'out');
    expect(await service.restore(out, 'p-', ['p-'])).toBe('p-b');
    expect(readFileSync(join(out, 'f'), 'utf8')).toBe('new');
    expect(await service.restore(out, 'p-a', ['p-'])).toBe('p-a');
    expect(readFileSync(join(out, 'f'), 'utf8')).toBe('old');
    expect(await service.restore(out, 'q/x y', [])).toBe('q/x y');
    expect(readFileSync(join(out, 'f'), 'utf8')).toBe('other');
    expect(await service.restore(out, 'q~2Fx y', [])).toBe('q~2Fx y');
    expect(readFileSync(join(out, 'f'), 'utf8')).toBe('tilde');
    expect(await service.restore(out, 'z', ['z-'])).toBeUndefined();
    await save('p-a', 'changed', 4000);
    expect(await service.restore(out, 'p-a', [])).toBe('p-a');
    expect(readFileSync(join(out, 'f'), 'utf8')).toBe('old');
  });
});
