/**
 * Issue 44, item 2: the shell's layer (`cudaenv use`, the auto-switch on cd, `cudaenv deactivate`)
 * and conda environments' cudaenv hooks (activate, activate --stack, deactivate, as conda runs
 * the real activate.d/deactivate.d scripts) opened and closed in any order, in real bash, zsh
 * and fish. After every step the variables carry one version, whole (its bin on PATH, its lib on
 * LD_LIBRARY_PATH, CUDA_HOME and CUDA_PATH), or none; after every prompt it is the version
 * `cudaenv current` would name (a model of the layers says which); once every layer is closed
 * the environment equals the one before, variable by variable, set-vs-unset included.
 *
 * The random sequences are seeded (CUDAENV_LAYERS_SEED to replay one); a failure prints the
 * seed, the sequence and the step.
 */
import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {writeHook} from '../../../src/core/conda/hook-files.js';
import {quoteFish, quoteSh} from '../../../src/core/text/quote.js';
import {CLI, cliEnv} from '../../helpers/cli.js';
import {describeIf} from '../../helpers/skip.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {envDiff, FAKE_CONDA, readDump} from '../conda/conda-sim.js';
import {have, makeStore, type ShellName} from './shell-harness.js';
import {rng} from '../../helpers/rng.js';

const LABELS = ['11.8.0', '12.4.1', '13.0.2'];
/** Conda environments and their hooks' versions; C's hook leaves LD_LIBRARY_PATH alone. */
const ENVS: Record<string, {version: string; policy: 'prepend' | 'none'}> = {
  A: {version: '12.4.1', policy: 'prepend'},
  B: {version: '11.8.0', policy: 'prepend'},
  C: {version: '13.0.2', policy: 'none'},
};
/** Project directories and the version their .cuda-version selects. */
const PROJECTS: Record<string, string> = {p124: '12.4.1', q118: '11.8.0'};
const USES: Record<string, string | null> = {'12.4': '12.4.1', '13.0': '13.0.2', '11.8': '11.8.0', system: null};

export type Step =
  | {kind: 'activate'; env: string; stack: boolean}
  | {kind: 'conda-deactivate'}
  | {kind: 'use'; spec: string}
  | {kind: 'deactivate'}
  | {kind: 'cd'; dir: string};

const show = (s: Step): string => {
  switch (s.kind) {
    case 'activate': return `conda activate ${s.stack ? '--stack ' : ''}${s.env}`;
    case 'conda-deactivate': return 'conda deactivate';
    case 'use': return `cudaenv use ${s.spec}`;
    case 'deactivate': return 'cudaenv deactivate';
    case 'cd': return `cd ${s.dir}`;
  }
};


/**
 * The layers as the shells and `cudaenv current` see them. conda's stack follows fake-conda.mjs
 * (activating the environment below the current one steps back down; the current one reactivates).
 */
class Model {
  conda: string[] = [];
  shell: {label: string | null; pinned: boolean} | null = null;
  cwd = 'outside';
  lastKey = '';

  constructor(readonly startVersion: string | undefined) {}

  private key(): string {
    if (this.shell?.pinned) return `e${this.shell.label}`;
    const top = this.conda.at(-1);
    if (top) return `c${ENVS[top]!.version}|${this.cwd}`;
    return `f${this.cwd}`;
  }

  /** The prompt hook (also run by cd). */
  prompt(): void {
    const k = `${this.key()}|${this.cwd}`;
    if (k === this.lastKey) return;
    this.lastKey = k;
    if (this.shell?.pinned || this.conda.length > 0) return;
    const v = PROJECTS[this.cwd] ?? null;
    this.shell = v === null ? null : {label: v, pinned: false};
  }

  step(s: Step): void {
    switch (s.kind) {
      case 'activate': {
        const n = this.conda.length;
        if (n > 0 && this.conda[n - 1] === s.env) break;
        if (n > 1 && this.conda[n - 2] === s.env) this.conda.pop();
        else this.conda.push(s.env);
        break;
      }
      case 'conda-deactivate': this.conda.pop(); break;
      case 'use':
        this.shell = {label: USES[s.spec]!, pinned: true};
        this.lastKey = `${this.key()}|${this.cwd}`;
        break;
      case 'deactivate':
        this.shell = null;
        this.lastKey = `${this.key()}|${this.cwd}`;
        break;
      case 'cd':
        this.cwd = s.dir;
        this.prompt();
        break;
    }
  }

  /** The version the variables must carry (null: none) and CUDAENV_VERSION. */
  expected(): {version: string | null; lib: boolean; cudaenvVersion: string | undefined} {
    const top = this.conda.at(-1);
    if (this.shell?.pinned) return {version: this.shell.label, lib: true, cudaenvVersion: this.shell.label ?? 'system'};
    if (top) return {version: ENVS[top]!.version, lib: ENVS[top]!.policy === 'prepend', cudaenvVersion: this.startVersion};
    return {version: this.shell?.label ?? null, lib: true, cudaenvVersion: this.startVersion};
  }
}

function randomSequence(next: () => number, maxSteps: number): Step[] {
  const pick = <T>(list: T[]): T => list[Math.floor(next() * list.length)]!;
  const steps: Step[] = [];
  const n = 1 + Math.floor(next() * maxSteps);
  for (let i = 0; i < n; i++) {
    const r = next();
    if (r < 0.2) steps.push({kind: 'activate', env: pick(Object.keys(ENVS)), stack: false});
    else if (r < 0.35) steps.push({kind: 'activate', env: pick(Object.keys(ENVS)), stack: true});
    else if (r < 0.5) steps.push({kind: 'conda-deactivate'});
    else if (r < 0.65) steps.push({kind: 'use', spec: pick(Object.keys(USES))});
    else if (r < 0.75) steps.push({kind: 'deactivate'});
    else steps.push({kind: 'cd', dir: pick([...Object.keys(PROJECTS), 'outside'])});
  }
  return steps;
}

/** The steps that close every layer still open, in a random order. */
function closers(next: () => number, steps: Step[]): Step[] {
  const m = new Model(undefined);
  for (const s of steps) m.step(s);
  const out: Step[] = [...m.conda.map((): Step => ({kind: 'conda-deactivate'})), {kind: 'deactivate'}, {kind: 'cd', dir: 'outside'}];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const STARTS: Array<[string, NodeJS.ProcessEnv]> = [
  ['unset', {}],
  ['empty', {LD_LIBRARY_PATH: '', CUDA_HOME: ''}],
  ['set', {LD_LIBRARY_PATH: '/opt/x::/opt/y', CUDA_HOME: '/opt/cuda', CUDA_PATH: '/opt/cuda'}],
];

const SHELLS: ShellName[] = ['bash', 'zsh', 'fish'];

describe('the shell layer and conda hooks, opened and closed in any order', () => {
  let tmp: {dir: string; cleanup: () => void};
  let store: string;
  const inits: Partial<Record<ShellName, string>> = {};
  const dirs: Record<string, string> = {};
  const versionDir = (label: string) => join(store, 'versions', label);

  beforeAll(async () => {
    tmp = makeTempDir('cudaenv-layers-');
    // A space and a quote in the store path: every layer must carry it intact.
    store = join(tmp.dir, "st ore'");
    await makeStore(store, LABELS);
    for (const [name, {version, policy}] of Object.entries(ENVS)) {
      const prefix = join(tmp.dir, 'envs', name);
      mkdirSync(join(prefix, 'conda-meta'), {recursive: true});
      mkdirSync(join(prefix, 'bin'), {recursive: true});
      writeHook(prefix, {version, toolkit: versionDir(version), ldLibraryPath: policy});
      dirs[name] = prefix;
    }
    for (const [name, label] of Object.entries(PROJECTS)) {
      dirs[name] = join(tmp.dir, name);
      mkdirSync(dirs[name]!, {recursive: true});
      writeFileSync(join(dirs[name]!, '.cuda-version'), `${label.split('.').slice(0, 2).join('.')}\n`);
    }
    dirs.outside = join(tmp.dir, 'outside');
    mkdirSync(dirs.outside, {recursive: true});
    // The check line after a switch comes from the cache once computed: quiet keeps `use` to that line.
    writeFileSync(join(store, 'config.json'), '{"quiet": true}\n');
    for (const shell of SHELLS.filter(have)) {
      const r = spawnSync(process.execPath, [CLI, 'init', shell], {env: cliEnv(store), encoding: 'utf8'});
      expect(r.status).toBe(0);
      inits[shell] = join(tmp.dir, `init.${shell}`);
      writeFileSync(inits[shell]!, r.stdout);
    }
  });
  afterAll(() => tmp.cleanup());

  /** The shell program: the integration, a `conda` as conda's shell function, then the steps, a dump before and after each prompt. */
  function program(shell: ShellName, steps: Step[], out: string): string {
    const fish = shell === 'fish';
    const q = fish ? quoteFish : quoteSh;
    const node = q(process.execPath);
    const lines: string[] = fish
      ? [`source ${q(inits.fish!)}`, `function conda; ${node} ${q(FAKE_CONDA)} fish $argv | source; end`]
      : [`. ${q(inits[shell]!)}`, `conda() { _fake_out=$(${node} ${q(FAKE_CONDA)} posix "$@"); eval "$_fake_out"; unset _fake_out; }`];
    const dump = (name: string) => `/usr/bin/env -0 > ${q(join(out, `${name}.env`))}`;
    lines.push(`cd ${q(dirs.outside!)}`, '_cudaenv_hook', dump('start'));
    for (const [i, s] of steps.entries()) {
      switch (s.kind) {
        case 'activate': lines.push(`conda activate ${s.stack ? '--stack ' : ''}${q(dirs[s.env]!)}`); break;
        case 'conda-deactivate': lines.push('conda deactivate'); break;
        case 'use': lines.push(`cudaenv use ${s.spec}`); break;
        case 'deactivate': lines.push('cudaenv deactivate'); break;
        case 'cd': lines.push(`cd ${q(dirs[s.dir]!)}`); break;
      }
      lines.push(dump(`${i}.step`), '_cudaenv_hook', dump(`${i}.prompt`));
    }
    return `${lines.join('\n')}\n`;
  }

  function run(shell: ShellName, tag: string, start: NodeJS.ProcessEnv, steps: Step[]) {
    const out = join(tmp.dir, 'runs', shell, tag);
    mkdirSync(out, {recursive: true});
    const script = join(out, `driver.${shell}`);
    writeFileSync(script, program(shell, steps, out));
    const env = cliEnv(store, {HOME: tmp.dir, PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', CONDA_SHLVL: '0', TERM: 'dumb'});
    for (const k of ['LD_LIBRARY_PATH', 'CONDA_PREFIX', 'CONDA_DEFAULT_ENV', 'VIRTUAL_ENV', 'PROMPT_COMMAND']) delete env[k];
    Object.assign(env, start);
    const args = shell === 'fish' ? ['--no-config', script] : shell === 'zsh' ? ['-f', script] : ['--norc', '--noprofile', script];
    const r = spawnSync(shell, args, {env, encoding: 'utf8', timeout: 120000, cwd: dirs.outside});
    return {status: r.status, stderr: r.stderr, out};
  }

  /** What is wrong with a state (empty: nothing): one version, whole, or none; `want` from the model after a prompt. */
  function problems(vars: Map<string, string>, start: Map<string, string>, want?: ReturnType<Model['expected']>): string[] {
    const root = `${join(store, 'versions')}/`;
    const labelOf = (p: string) => (p.startsWith(root) ? p.slice(root.length).split('/')[0]! : undefined);
    const path = (vars.get('PATH') ?? '').split(':').filter((e) => e.startsWith(root));
    const ld = vars.has('LD_LIBRARY_PATH') ? vars.get('LD_LIBRARY_PATH')!.split(':').filter((e) => e.startsWith(root)) : [];
    const home = vars.get('CUDA_HOME');
    const cpath = vars.get('CUDA_PATH');
    const versions = new Set([...path, ...ld, home ?? '', cpath ?? ''].map(labelOf).filter((l) => l !== undefined));
    const out: string[] = [];
    if (versions.size > 1) out.push(`more than one version: ${[...versions].join(', ')}`);
    const [v] = [...versions];
    if (v === undefined) {
      if (home !== start.get('CUDA_HOME') || cpath !== start.get('CUDA_PATH')) out.push(`no version, but CUDA_HOME=${home} CUDA_PATH=${cpath}`);
    } else {
      if (path.length !== 1 || path[0] !== `${versionDir(v)}/bin`) out.push(`PATH does not hold ${v}'s bin once: ${path.join(':')}`);
      if (home !== versionDir(v) || cpath !== versionDir(v)) out.push(`CUDA_HOME=${home} CUDA_PATH=${cpath} while ${v} is on PATH`);
      if (ld.length > 1) out.push(`LD_LIBRARY_PATH holds ${ld.join(':')}`);
    }
    if (want) {
      if ((v ?? null) !== want.version) out.push(`the version is ${v ?? 'none'}, the layers say ${want.version ?? 'none'}`);
      if (want.version && ld.length !== (want.lib ? 1 : 0)) out.push(`LD_LIBRARY_PATH's entries of the store: ${ld.join(':') || 'none'}, want ${want.lib ? 'the lib' : 'none'}`);
      if (vars.get('CUDAENV_VERSION') !== want.cudaenvVersion) out.push(`CUDAENV_VERSION=${vars.get('CUDAENV_VERSION')}, want ${want.cudaenvVersion}`);
    }
    return out;
  }

  /** Runs a sequence and returns what went wrong, as lines naming the step. */
  function check(shell: ShellName, tag: string, startName: string, steps: Step[]): string[] {
    const start = Object.fromEntries(STARTS)[startName]!;
    const r = run(shell, tag, start, steps);
    const errors: string[] = [];
    if (r.status !== 0) errors.push(`${shell} exited ${r.status}: ${r.stderr}`);
    const before = readDump(r.out, 'start');
    const model = new Model(undefined);
    for (const [i, s] of steps.entries()) {
      model.step(s);
      for (const p of problems(readDump(r.out, `${i}.step`), before)) errors.push(`after step ${i + 1} (${show(s)}): ${p}`);
      model.prompt();
      for (const p of problems(readDump(r.out, `${i}.prompt`), before, model.expected())) errors.push(`at the prompt after step ${i + 1} (${show(s)}): ${p}`);
    }
    const end = envDiff(before, readDump(r.out, `${steps.length - 1}.prompt`)).filter((d) => !d.startsWith('OLDPWD:'));
    for (const d of end) errors.push(`at the end, differs from the start: ${d}`);
    return errors;
  }

  const seed = Number(process.env.CUDAENV_LAYERS_SEED ?? 4402);
  const COUNT = 50;
  const sequences: Array<{startName: string; steps: Step[]}> = [];
  {
    const next = rng(seed);
    for (let i = 0; i < COUNT; i++) {
      const steps = randomSequence(next, 8);
      sequences.push({startName: STARTS[Math.floor(next() * STARTS.length)]![0], steps: [...steps, ...closers(next, steps)]});
    }
  }

  for (const shell of SHELLS) {
    const t = describeIf(have(shell), `needs ${shell} (apt-get install ${shell})`);
    t(shell, () => {
      test('the issue\'s sequence: conda activate (hook 12.4), use 13.0, conda deactivate, cudaenv deactivate', () => {
        const steps: Step[] = [{kind: 'activate', env: 'A', stack: false}, {kind: 'use', spec: '13.0'}, {kind: 'conda-deactivate'}, {kind: 'deactivate'}];
        for (const [startName] of STARTS) expect({start: startName, errors: check(shell, `issue-${startName}`, startName, steps)}).toEqual({start: startName, errors: []});
      });

      test('stacked hooks closed under a `use`, and a `use` closed under stacked hooks', () => {
        const steps: Step[] = [
          {kind: 'cd', dir: 'q118'}, {kind: 'activate', env: 'A', stack: false}, {kind: 'activate', env: 'C', stack: true}, {kind: 'use', spec: 'system'},
          {kind: 'conda-deactivate'}, {kind: 'deactivate'}, {kind: 'use', spec: '13.0'}, {kind: 'activate', env: 'B', stack: false},
          {kind: 'deactivate'}, {kind: 'conda-deactivate'}, {kind: 'conda-deactivate'}, {kind: 'cd', dir: 'outside'},
        ];
        expect(check(shell, 'stacked', 'set', steps)).toEqual([]);
      });

      test(`${COUNT} random sequences (seed ${seed}; CUDAENV_LAYERS_SEED replays another)`, () => {
        const deadline = Date.now() + 240_000;
        const failures: string[] = [];
        let ran = 0;
        for (const [i, {startName, steps}] of sequences.entries()) {
          if (Date.now() > deadline) break;
          ran++;
          const errors = check(shell, `random-${i}`, startName, steps);
          if (errors.length > 0) {
            failures.push(`seed ${seed}, sequence ${i} (variables ${startName} at the start): ${steps.map(show).join('; ')}\n  ${errors.slice(0, 4).join('\n  ')}`);
            if (failures.length >= 3) break;
          }
        }
        expect(failures).toEqual([]);
        // Bounded in time, but a run that got through too few sequences proves too little.
        expect(ran).toBeGreaterThanOrEqual(Math.min(COUNT, 20));
      }, 300_000);
    });
  }
});
