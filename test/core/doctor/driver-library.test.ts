import {describe, expect, test} from '@jest/globals';
import {cpSync, existsSync, mkdirSync} from 'node:fs';
import {join} from 'node:path';
import {driverLibraryFindings} from '../../../src/core/doctor/driver-library.js';
import {defaultDeps} from '../../../src/core/doctor/engine.js';
import {REPO_ROOT} from '../../helpers/cli.js';
import {describeIf} from '../../helpers/skip.js';
import {NEEDS} from '../../helpers/capabilities.js';
import type {TempDir} from '../../helpers/tmp.js';
import {buildLib, HAVE_GCC} from '../elf/fixtures.js';
import {withMachine, type Machine} from './machine.js';

/**
 * doctor names the libcuda.so.1 a CUDA program here would get at its first call (issue 32 item 3),
 * with Debian's real libcudart (test/fixtures/fetch-cuda-libs.sh) in the active toolkit.
 */
const RUNTIME = join(REPO_ROOT, 'test', 'fixtures', 'downloaded', 'trixie-runtime', 'usr', 'lib', 'x86_64-linux-gnu');
const present = existsSync(join(RUNTIME, 'libcudart.so.12'));
const d = describeIf(present && HAVE_GCC, present ? 'needs gcc (apt-get install gcc)' : NEEDS.realCudaLibs);

describe('doctor and the driver library a program would load', () => {
  d('with the real libcudart of CUDA 12.4', () => {
    let m: Machine;
    let tmp: TempDir;
    withMachine('each', (made, dir) => ([m, tmp] = [made, dir]));

    const toolkit = (): {dir: string; real: string} => {
      const dir = join(tmp.dir, 'cuda-12.4');
      mkdirSync(join(dir, 'lib64'), {recursive: true});
      for (const name of ['libcudart.so.12', 'libcudart.so.12.4.127']) cpSync(join(RUNTIME, name), join(dir, 'lib64', name), {verbatimSymlinks: true});
      return {dir, real: dir};
    };
    const stubIn = (dir: string): string => buildLib({out: join(dir, 'libcuda.so.1'), soname: 'libcuda.so.1', extra: ['-nostdlib'], source: 'int cuInit(unsigned f) { return 34; }\n'});

    test('the toolkit\'s stub first on LD_LIBRARY_PATH is an error naming the entry, with the command that removes it', async () => {
      const stubs = join(tmp.dir, 'cuda-12.4', 'lib64', 'stubs');
      const active = {...toolkit(), source: 'cudaenv' as const};
      stubIn(stubs);
      m.env = {...m.env, LD_LIBRARY_PATH: `${stubs}:${join(active.dir, 'lib64')}`};
      const [finding, ...rest] = await driverLibraryFindings(m.ctx(), active, [], defaultDeps.check, null);
      expect(rest).toEqual([]);
      expect(finding).toMatchObject({id: 'driver.stub-library', severity: 'error'});
      expect(finding!.title).toContain('CUDA driver is a stub library');
      expect(finding!.evidence[0]).toBe(`loader picks: ${join(stubs, 'libcuda.so.1')} (LD_LIBRARY_PATH entry ${stubs})`);
      expect(finding!.fix).toBe(`drop ${stubs} from LD_LIBRARY_PATH: \`export LD_LIBRARY_PATH=${join(active.dir, 'lib64')}\`, so that the driver's libcuda.so.1 is found`);
    });

    test('no stub anywhere: nothing to say', async () => {
      const active = {...toolkit(), source: 'cudaenv' as const};
      m.env = {...m.env, LD_LIBRARY_PATH: join(active.dir, 'lib64')};
      expect(await driverLibraryFindings(m.ctx(), active, [], defaultDeps.check, null)).toEqual([]);
    });
  });
});
