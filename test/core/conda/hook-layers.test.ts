/**
 * The conda hooks alone, in every shell conda sources them from (bash, zsh, dash, fish, tcsh):
 * seeded random sequences of activate, activate --stack and deactivate over environments whose
 * hooks name different versions (one under `none`). After every step the variables carry the
 * version of the hook of the environment on top of conda's stack, whole, or none; once every
 * environment is deactivated the environment equals the one before, variable by variable.
 * (test/core/shell/layers.test.ts adds the shell integration's layer in bash, zsh and fish.)
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {mkdirSync} from 'node:fs';
import {join} from 'node:path';
import {writeHook} from '../../../src/core/conda/hook-files.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {driver, envDiff, hasShell, readDump, runDriver, SHELLS, type Step} from './conda-sim.js';
import {rng} from '../../helpers/rng.js';

const ENVS: Record<string, {version: string; policy: 'prepend' | 'none'}> = {
  A: {version: '12.4.1', policy: 'prepend'},
  B: {version: '11.8.0', policy: 'prepend'},
  C: {version: '13.0.2', policy: 'none'},
};


type Op = {activate: string; stack: boolean} | {deactivate: true};
const show = (o: Op) => ('activate' in o ? `activate ${o.stack ? '--stack ' : ''}${o.activate}` : 'deactivate');

/** conda's stack as fake-conda.mjs keeps it. */
function apply(stack: string[], o: Op): void {
  if (!('activate' in o)) {
    stack.pop();
    return;
  }
  const n = stack.length;
  if (n > 0 && stack[n - 1] === o.activate) return;
  if (n > 1 && stack[n - 2] === o.activate) stack.pop();
  else stack.push(o.activate);
}

const tmp = makeTempDir('cudaenv-hook-layers-');
const versions = join(tmp.dir, 'store', 'versions');
const prefixes: Record<string, string> = {};
beforeAll(() => {
  for (const [name, {version, policy}] of Object.entries(ENVS)) {
    for (const sub of ['bin', 'lib64']) mkdirSync(join(versions, version, sub), {recursive: true});
    prefixes[name] = join(tmp.dir, 'envs', name);
    mkdirSync(join(prefixes[name]!, 'conda-meta'), {recursive: true});
    mkdirSync(join(prefixes[name]!, 'bin'), {recursive: true});
    writeHook(prefixes[name]!, {version, toolkit: join(versions, version), ldLibraryPath: policy});
  }
});
afterAll(() => tmp.cleanup());

const seed = Number(process.env.CUDAENV_LAYERS_SEED ?? 4402);
const COUNT = 20;
const sequences: Op[][] = [];
{
  const next = rng(seed);
  for (let i = 0; i < COUNT; i++) {
    const ops: Op[] = [];
    const stack: string[] = [];
    const n = 1 + Math.floor(next() * 8);
    for (let j = 0; j < n; j++) {
      const r = next();
      const env = Object.keys(ENVS)[Math.floor(next() * 3)]!;
      const o: Op = r < 0.4 ? {activate: env, stack: false} : r < 0.7 ? {activate: env, stack: true} : {deactivate: true};
      ops.push(o);
      apply(stack, o);
    }
    for (let j = 0; j < stack.length; j++) ops.push({deactivate: true});
    sequences.push(ops);
  }
}

function problems(vars: Map<string, string>, start: Map<string, string>, top: string | undefined): string[] {
  const root = `${versions}/`;
  const path = (vars.get('PATH') ?? '').split(':').filter((e) => e.startsWith(root));
  const ld = vars.has('LD_LIBRARY_PATH') ? vars.get('LD_LIBRARY_PATH')!.split(':').filter((e) => e.startsWith(root)) : [];
  const want = top === undefined ? undefined : ENVS[top]!;
  const out: string[] = [];
  if (!want) {
    if (path.length + ld.length > 0) out.push(`no environment with a hook, but PATH/LD_LIBRARY_PATH hold ${[...path, ...ld].join(':')}`);
    if (vars.get('CUDA_HOME') !== start.get('CUDA_HOME') || vars.get('CUDA_PATH') !== start.get('CUDA_PATH')) out.push(`CUDA_HOME=${vars.get('CUDA_HOME')} CUDA_PATH=${vars.get('CUDA_PATH')}`);
    return out;
  }
  const dir = join(versions, want.version);
  if (path.join(':') !== `${dir}/bin`) out.push(`PATH's toolkit entries: ${path.join(':')}, want ${dir}/bin`);
  if (ld.join(':') !== (want.policy === 'prepend' ? `${dir}/lib64` : '')) out.push(`LD_LIBRARY_PATH's toolkit entries: ${ld.join(':')}`);
  if (vars.get('CUDA_HOME') !== dir || vars.get('CUDA_PATH') !== dir) out.push(`CUDA_HOME=${vars.get('CUDA_HOME')} CUDA_PATH=${vars.get('CUDA_PATH')}, want ${dir}`);
  return out;
}

for (const shell of SHELLS) {
  describeIf(hasShell(shell), `needs ${shell} (apt-get install ${shell})`)(`conda hooks of different versions in ${shell}`, () => {
    test(`${COUNT} random sequences of activate, --stack and deactivate (seed ${seed})`, () => {
      const failures: string[] = [];
      for (const [i, ops] of sequences.entries()) {
        const out = join(tmp.dir, 'runs', shell, String(i));
        const steps: Step[] = [{dump: 'start'}];
        for (const [j, o] of ops.entries()) {
          steps.push({conda: 'activate' in o ? ['activate', ...(o.stack ? ['--stack'] : []), prefixes[o.activate]!] : ['deactivate']}, {dump: `s${j}`});
        }
        const env: NodeJS.ProcessEnv = {PATH: `/fake/conda/condabin:${process.env.PATH}`, HOME: process.env.HOME, LANG: 'C.UTF-8', CONDA_SHLVL: '0'};
        if (i % 2 === 1) Object.assign(env, {LD_LIBRARY_PATH: '/opt/x::/opt/y', CUDA_HOME: '', CUDA_PATH: '/opt/cuda'});
        const r = runDriver(shell, driver(shell, steps, out), out, env);
        const errors: string[] = r.status === 0 && r.stderr === '' ? [] : [`status ${r.status}: ${r.stderr}`];
        const start = readDump(out, 'start');
        const stack: string[] = [];
        for (const [j, o] of ops.entries()) {
          apply(stack, o);
          for (const p of problems(readDump(out, `s${j}`), start, stack.at(-1))) errors.push(`after step ${j + 1} (${show(o)}): ${p}`);
        }
        for (const d of envDiff(start, readDump(out, `s${ops.length - 1}`))) errors.push(`at the end, differs from the start: ${d}`);
        if (errors.length > 0) failures.push(`seed ${seed}, sequence ${i}: ${ops.map(show).join('; ')}\n  ${errors.slice(0, 4).join('\n  ')}`);
        if (failures.length >= 3) break;
      }
      expect(failures).toEqual([]);
    }, 240_000);
  });
}

describe('the sequences', () => {
  test('cover stacking, switching and stepping back down', () => {
    const all = sequences.flat();
    expect(all.some((o) => 'activate' in o && o.stack)).toBe(true);
    expect(all.some((o) => 'activate' in o && !o.stack)).toBe(true);
    expect(sequences.some((ops) => ops.filter((o) => 'activate' in o).length >= 3)).toBe(true);
  });
});
