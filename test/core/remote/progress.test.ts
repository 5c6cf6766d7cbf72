import {describe, expect, test} from '@jest/globals';
import {formatBytes, ListrReporter, PlainReporter} from '../../../src/core/remote/progress.js';
import type {InstallEvent} from '../../../src/core/remote/install.js';

const plan: InstallEvent = {type: 'plan', label: '12.4.1', platform: 'linux-x86_64', platformWhy: 'this machine is x86_64', components: [{name: 'cuda_nvcc', version: '12.4.131', size: 51184484}, {name: 'cuda_cudart', version: '12.4.127', size: 1099680}]};
const ev = (component: string, stage: 'download' | 'verify' | 'extract' | 'done' | 'failed', bytes = 0, note?: string): InstallEvent =>
  ({type: 'progress', component, progress: {stage, bytes, total: 0, fromCache: false, note}});

describe('progress', () => {
  test('plain lines: one per stage change and per retry', async () => {
    const lines: string[] = [];
    const r = new PlainReporter((l) => lines.push(l));
    for (const e of [plan, ev('cuda_nvcc', 'download', 10), ev('cuda_nvcc', 'download', 20), ev('cuda_nvcc', 'download', 30, 'retry 1 after HTTP 500'), ev('cuda_nvcc', 'done')]) r.onEvent(e);
    await r.finish(true);
    expect(lines[0]).toBe('Platform: linux-x86_64 (this machine is x86_64)');
    expect(lines[1]).toBe('Installing CUDA 12.4.1: cuda_nvcc, cuda_cudart (49.9 MiB)');
    expect(lines.slice(2).map((l) => l.replace(/^(\S+ \S+ \w+).*/, '$1'))).toEqual(['cuda_nvcc 12.4.131: download', 'cuda_nvcc 12.4.131: download', 'cuda_nvcc 12.4.131: done']);
    expect(lines[3]).toContain('retry 1 after HTTP 500');
  });

  test('listr2: finishes even when a component is done before its task starts, and on failure', async () => {
    const listr = await import('listr2');
    const ok = new ListrReporter(listr, () => undefined, 'silent');
    ok.onEvent(plan);
    ok.onEvent(ev('cuda_nvcc', 'done'));
    ok.onEvent(ev('cuda_cudart', 'done'));
    await ok.finish(true);
    const bad = new ListrReporter(listr, () => undefined, 'silent');
    bad.onEvent(plan);
    bad.onEvent(ev('cuda_nvcc', 'failed'));
    await bad.finish(false);
  });

  test('sizes', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(51184484)).toBe('48.8 MiB');
  });
});
