import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {rmSync, unlinkSync} from 'node:fs';
import {join} from 'node:path';
import {writeHook, hookPaths} from '../../../src/core/conda/hook-files.js';
import {condaFindings, hookVersion} from '../../../src/core/doctor/conda.js';
import {inspectToolkits} from '../../../src/core/doctor/toolkit.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {installVersion, makeMachine, setGlobal, write, type Machine} from './machine.js';

describe('conda hook', () => {
  let tmp: {dir: string; cleanup: () => void};
  let m: Machine;
  let prefix: string;
  beforeEach(() => {
    tmp = makeTempDir();
    m = makeMachine(tmp.dir);
    prefix = join(tmp.dir, 'miniconda3/envs/ml');
  });
  afterEach(() => tmp.cleanup());

  /** Written by src/core/conda's own writer, exactly as `cudaenv conda hook install` leaves it. */
  const hook = (version: string) => {
    const toolkit = join(m.paths.versions, version);
    writeHook(prefix, {version, toolkit, ldLibraryPath: 'none'});
    write(join(prefix, 'etc/conda/activate.d/other-package.sh'), 'export FOO=1\n');
    return toolkit;
  };
  const run = () => {
    const ctx = m.ctx();
    return condaFindings(ctx, inspectToolkits(ctx));
  };

  test('the hook version from the marker, a header, or the store path it exports', () => {
    expect(hookVersion('# cudaenv-conda-hook: {"version":"12.4.1","toolkit":"/s/versions/12.4.1","ldLibraryPath":"none"}\n', '/s/versions'))
      .toEqual({version: '12.4.1', toolkit: '/s/versions/12.4.1'});
    expect(hookVersion('# cudaenv-version: 12.1.1\n', '/s/versions').version).toBe('12.1.1');
    expect(hookVersion("set CUDA_HOME='/s/versions/11.8.0'\n", '/s/versions').version).toBe('11.8.0');
    expect(hookVersion('# cudaenv-conda-hook: {broken\n', '/s/versions').version).toBeNull();
  });

  test('no conda environment, or none with a hook: facts only', () => {
    expect(run()).toEqual({facts: {prefix: null, hooks: []}, findings: []});
    m.env = {...m.env, CONDA_PREFIX: prefix};
    expect(run().findings).toEqual([]);
  });

  test('a hook matching the active version and in effect: info only', () => {
    const tk = hook('12.4.1');
    installVersion(m, '12.4.1');
    setGlobal(m, '12.4');
    m.env = {...m.env, CONDA_PREFIX: prefix, CUDA_HOME: tk};
    const r = run();
    expect(r.findings.map((f) => [f.id, f.severity])).toEqual([['conda.hook', 'info']]);
    expect(r.facts.hooks).toEqual([{file: join(prefix, 'etc/conda/activate.d/~~cudaenv.sh'), version: '12.4.1', toolkit: tk, ldLibraryPath: 'none', missing: []}]);
  });

  test('a partly removed hook, and a hand-made one that names its version', () => {
    const tk = hook('12.4.1');
    installVersion(m, '12.4.1');
    m.env = {...m.env, CONDA_PREFIX: prefix, CUDA_HOME: tk};
    const fish = hookPaths(prefix).find((p) => p.endsWith('activate.d/~~cudaenv.fish'))!;
    unlinkSync(fish);
    const incomplete = run().findings.find((f) => f.id === 'conda.hook-incomplete');
    expect(incomplete?.evidence).toEqual([fish]);
    expect(incomplete!.fix).toBe(`cudaenv conda hook install 12.4.1 -p ${prefix}`);
    for (const p of hookPaths(prefix)) rmSync(p, {force: true});
    write(join(prefix, 'etc/conda/activate.d/my-cudaenv.sh'), `# cudaenv-version: 12.4.1\nexport CUDA_HOME='${tk}'\n`);
    expect(run().findings.map((f) => f.id)).toEqual(['conda.hook']);
  });

  test('a damaged marker is reported with the reinstall command', () => {
    hook('12.4.1');
    write(join(prefix, 'etc/conda/activate.d/~~cudaenv.sh'), '# cudaenv-conda-hook: {broken\n');
    m.env = {...m.env, CONDA_PREFIX: prefix};
    const [f] = run().findings;
    expect(f).toMatchObject({id: 'conda.hook-unreadable', severity: 'warning'});
    expect(f!.evidence.join('\n')).toContain('~~cudaenv.sh');
  });

  test('a hook for another version than cudaenv selects, not in effect in this shell', () => {
    hook('12.1.1');
    installVersion(m, '12.1.1');
    installVersion(m, '12.4.1');
    setGlobal(m, '12.4');
    m.env = {...m.env, CONDA_PREFIX: prefix};
    const ids = run().findings.map((f) => f.id);
    expect(ids).toEqual(['conda.hook', 'conda.hook-mismatch', 'conda.hook-not-applied']);
    const mismatch = run().findings[1]!;
    expect(mismatch.title).toContain('12.1.1');
    expect(mismatch.fix).toBe(`cudaenv conda hook install 12.4.1 -p ${prefix}, or change what selects 12.4.1`);
  });

  test('fix commands quote a prefix with spaces and shell characters (pasting them runs nothing)', () => {
    prefix = join(tmp.dir, "my envs/ml $(touch pwned) 'q'");
    hook('12.1.1');
    installVersion(m, '12.1.1');
    installVersion(m, '12.4.1');
    setGlobal(m, '12.4');
    m.env = {...m.env, CONDA_PREFIX: prefix};
    const quoted = `'${prefix.replaceAll("'", "'\\''")}'`;
    const fixes = run().findings.map((f) => f.fix);
    expect(fixes).toContain(`cudaenv conda hook install 12.4.1 -p ${quoted}, or change what selects 12.4.1`);
    expect(fixes).toContain(`conda deactivate && conda activate ${quoted}`);
  });

  test('a hook whose version is no longer installed is an error', () => {
    hook('11.8.0');
    m.env = {...m.env, CONDA_PREFIX: prefix};
    const [f] = run().findings;
    expect(f).toMatchObject({id: 'conda.hook-version-missing', severity: 'error'});
    expect(f!.fix).toContain('cudaenv install 11.8.0');
  });
});
