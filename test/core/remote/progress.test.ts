import {describe, expect, test} from '@jest/globals';
import {ListrReporter, PlainReporter} from '../../../src/core/remote/progress.js';
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
    const listr2 = await import('listr2');
    // The real listr2, with each list kept so its tasks' final state and titles can be read.
    const lists: InstanceType<typeof listr2.Listr>[] = [];
    class Recorded extends listr2.Listr<unknown> {
      constructor(...args: ConstructorParameters<typeof listr2.Listr<unknown>>) {
        super(...args);
        lists.push(this as never);
      }
    }
    const listr = {...listr2, Listr: Recorded} as unknown as typeof listr2;
    const settled = (p: Promise<void>): Promise<string> => Promise.race([p.then(() => 'finished'), new Promise<string>((r) => setTimeout(() => r('hung'), 5000).unref())]);
    const state = (l: InstanceType<typeof listr2.Listr>) => l.tasks.map((t) => ({title: t.title, completed: t.isCompleted(), failed: t.hasFailed()}));

    const ok = new ListrReporter(listr, () => undefined, 'silent');
    ok.onEvent(plan);
    ok.onEvent(ev('cuda_nvcc', 'done'));
    ok.onEvent(ev('cuda_cudart', 'done'));
    expect(await settled(ok.finish(true))).toBe('finished');
    expect(lists).toHaveLength(1);
    expect(state(lists[0]!)).toEqual([
      {title: 'cuda_nvcc 12.4.131: done (48.8 MiB)', completed: true, failed: false},
      {title: 'cuda_cudart 12.4.127: done (1.0 MiB)', completed: true, failed: false},
    ]);

    const bad = new ListrReporter(listr, () => undefined, 'silent');
    bad.onEvent(plan);
    bad.onEvent(ev('cuda_nvcc', 'failed'));
    expect(await settled(bad.finish(false))).toBe('finished');
    expect(lists).toHaveLength(2);
    // The failed component and the one that never ran are both marked failed, not left spinning.
    expect(state(lists[1]!)).toEqual([
      {title: 'cuda_nvcc 12.4.131: failed', completed: false, failed: true},
      {title: 'cuda_cudart 12.4.127: waiting (1.0 MiB)', completed: false, failed: true},
    ]);
  });
});
