import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {execFileSync} from 'node:child_process';
import {mkdirSync, rmSync, symlinkSync, unlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {defaultDeps} from '../../../src/core/doctor/engine.js';
import {runDoctor} from '../../../src/core/doctor/index.js';
import {readLdSoConf} from '../../../src/core/doctor/ld-so-conf.js';
import {loaderView} from '../../../src/core/doctor/loader-view.js';
import {inspectToolkits} from '../../../src/core/doctor/toolkit.js';
import {makeTempDir} from '../../helpers/tmp.js';
import {HAVE_GCC, HAVE_LDCONFIG, buildLib, makeMachine, systemToolkit, write, type Machine} from './machine.js';
import {describeIf} from '../../helpers/skip.js';

const ready = HAVE_GCC && HAVE_LDCONFIG;
const maybe = describeIf(ready, 'needs gcc and ldconfig (apt-get install gcc libc-bin)');

describe('ld.so.conf', () => {
  test('include globs (absolute and relative), comments, several dirs per line, old type suffixes', () => {
    const tmp = makeTempDir();
    try {
      const m = makeMachine(tmp.dir);
      write(join(m.sysroot, 'etc/ld.so.conf'), '# comment\ninclude /etc/ld.so.conf.d/*.conf\ninclude extra.d/x?.conf\n/opt/a /opt/b=libc6\nhwcap 0 nosegneg\n');
      write(join(m.sysroot, 'etc/ld.so.conf.d/b-cuda.conf'), '/usr/local/cuda/lib64 # the link\n');
      write(join(m.sysroot, 'etc/ld.so.conf.d/a-x86.conf'), '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n');
      write(join(m.sysroot, 'etc/ld.so.conf.d/ignored.txt'), '/nope\n');
      write(join(m.sysroot, 'etc/extra.d/x1.conf'), '/opt/extra\n');
      expect(readLdSoConf(m.ctx()).map((c) => `${c.file}:${c.line}:${c.dir}`)).toEqual([
        '/etc/ld.so.conf.d/a-x86.conf:1:/lib/x86_64-linux-gnu',
        '/etc/ld.so.conf.d/a-x86.conf:2:/usr/lib/x86_64-linux-gnu',
        '/etc/ld.so.conf.d/b-cuda.conf:1:/usr/local/cuda/lib64',
        '/etc/extra.d/x1.conf:1:/opt/extra',
        '/etc/ld.so.conf:4:/opt/a',
        '/etc/ld.so.conf:4:/opt/b',
      ]);
    } finally {
      tmp.cleanup();
    }
  });
});

describe('one directory by two names (merged /usr)', () => {
  test('/lib/x86_64-linux-gnu and /usr/lib/x86_64-linux-gnu are one directory: counted once, its CUDA libraries listed once (issue 42, 5)', () => {
    const tmp = makeTempDir();
    try {
      const m = makeMachine(tmp.dir);
      // Debian since 12: /lib -> usr/lib, and x86_64-linux-gnu.conf names both spellings.
      mkdirSync(join(m.sysroot, 'usr/lib/x86_64-linux-gnu'), {recursive: true});
      rmSync(join(m.sysroot, 'lib'), {recursive: true, force: true});
      symlinkSync('usr/lib', join(m.sysroot, 'lib'));
      write(join(m.sysroot, 'usr/lib/x86_64-linux-gnu/libcudart.so.12'), 'stand-in: only its name is counted here');
      write(join(m.sysroot, 'etc/ld.so.conf'), 'include /etc/ld.so.conf.d/*.conf\n');
      write(join(m.sysroot, 'etc/ld.so.conf.d/x86_64-linux-gnu.conf'), '/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n');
      const view = loaderView(m.ctx(), inspectToolkits(m.ctx()), undefined);
      expect(view.facts.confDirs.map((c) => [c.dir, c.sameAs ?? null])).toEqual([
        ['/usr/local/lib/x86_64-linux-gnu', null], ['/lib/x86_64-linux-gnu', null], ['/usr/lib/x86_64-linux-gnu', '/lib/x86_64-linux-gnu'],
      ]);
      const conf = view.findings.find((f) => f.id === 'loader.conf-cuda-dirs');
      expect(conf?.evidence).toEqual(['/etc/ld.so.conf.d/x86_64-linux-gnu.conf:2: /lib/x86_64-linux-gnu (1 CUDA libraries)']);
    } finally {
      tmp.cleanup();
    }
  });
});

describe('ld.so.conf under CUDAENV_SYSROOT', () => {
  test('a directory reached through an absolute link of the image exists (issue 37, 2f)', () => {
    const tmp = makeTempDir();
    try {
      const m = makeMachine(tmp.dir);
      systemToolkit(m, '12.4.1', true);
      write(join(m.sysroot, 'etc/ld.so.conf'), 'include /etc/ld.so.conf.d/*.conf\n');
      write(join(m.sysroot, 'etc/ld.so.conf.d/cuda.conf'), '/usr/local/cuda/lib64\n');
      const view = loaderView(m.ctx(), inspectToolkits(m.ctx()), undefined);
      // Before: "/etc/ld.so.conf.d/cuda.conf names /usr/local/cuda/lib64, which does not exist (a removed toolkit?)".
      expect(view.findings.map((f) => f.id)).toEqual(['loader.conf-cuda-dirs']);
      expect(view.facts.confDirs).toEqual([expect.objectContaining({dir: '/usr/local/cuda/lib64', exists: true})]);
      // The fake toolkit's libcudart and its links, counted in the image's directory.
      expect(view.facts.confDirs[0]!.cudaLibraries).toBeGreaterThan(0);
    } finally {
      tmp.cleanup();
    }
  });
});

maybe('the loader view from a real ld.so.cache', () => {
  let tmp: {dir: string; cleanup: () => void};
  let m: Machine;
  let old: string;
  let conf: string;
  beforeAll(() => {
    tmp = makeTempDir();
    m = makeMachine(tmp.dir);
    old = systemToolkit(m, '12.3.2');
    const current = systemToolkit(m, '12.4.1');
    rmSync(join(current, '..', 'cuda'), {force: true});
    symlinkSync('/usr/local/cuda-12.4', join(m.sysroot, 'usr/local/cuda'));
    for (const dir of [old, current]) {
      buildLib({out: join(dir, 'lib64', 'libcublas.so.12'), soname: 'libcublas.so.12', source: 'int cublasCreate(void){return 0;}\n'});
    }
    // ldconfig reads real paths: the conf files name directories inside the sysroot as they are.
    write(join(m.sysroot, 'etc/ld.so.conf'), `include ${m.sysroot}/etc/ld.so.conf.d/*.conf\n`);
    conf = write(join(m.sysroot, 'etc/ld.so.conf.d/cuda-12-3.conf'), `${join(old, 'lib64')}\n`);
    write(join(m.sysroot, 'etc/ld.so.conf.d/cuda-11-0.conf'), `${join(m.sysroot, 'usr/local/cuda-11.0/lib64')}\n`);
    execFileSync('ldconfig', ['-C', join(m.sysroot, 'etc/ld.so.cache'), '-f', join(m.sysroot, 'etc/ld.so.conf')], {stdio: 'pipe'});
  });
  afterAll(() => tmp.cleanup());

  const run = async () => {
    const ctx = m.ctx();
    const cache = await defaultDeps.readCache(join(m.sysroot, 'etc/ld.so.cache'));
    return loaderView(ctx, inspectToolkits(ctx), cache?.entries);
  };

  test('CUDA directories of ld.so.conf.d, a missing one, and a cache into another toolkit than /usr/local/cuda', async () => {
    const {findings, facts} = await run();
    const byId = Object.fromEntries(findings.map((f) => [f.id, f]));
    expect(Object.keys(byId).sort()).toEqual(['loader.cache-other-toolkit', 'loader.conf-cuda-dirs', 'loader.conf-missing-dir']);
    expect(byId['loader.conf-cuda-dirs']!.severity).toBe('info');
    expect(byId['loader.conf-cuda-dirs']!.evidence[0]).toContain('cuda-12-3.conf:1');
    expect(byId['loader.conf-missing-dir']!.severity).toBe('warning');
    const other = byId['loader.cache-other-toolkit']!;
    expect(other.severity).toBe('warning');
    expect(other.title).toContain('CUDA 12.3.2');
    expect(other.title).toContain('/usr/local/cuda-12.4');
    expect(other.evidence.join('\n')).toContain(`libcublas.so.12 => ${join(old, 'lib64', 'libcublas.so.12')}`);
    expect(other.fix).toContain('cuda-12-3.conf');
    expect(facts.cudaCacheEntries).toBeGreaterThanOrEqual(1); // 12.3's libcublas (the fake libcudart is not ELF)
  });

  test('a cache that outlived its ld.so.conf line: rebuild it', async () => {
    unlinkSync(conf);
    const other = (await run()).findings.find((f) => f.id === 'loader.cache-other-toolkit');
    expect(other?.fix).toContain('sudo ldconfig');
    writeFileSync(conf, `${join(old, 'lib64')}\n`);
  });

  test('cache entries whose file has gone are stale', async () => {
    unlinkSync(join(old, 'lib64', 'libcublas.so.12'));
    const stale = (await run()).findings.find((f) => f.id === 'loader.cache-stale-missing');
    expect(stale?.severity).toBe('warning');
    expect(stale!.evidence).toContain(`libcublas.so.12 => ${join(old, 'lib64', 'libcublas.so.12')}`);
    expect(stale!.fix).toContain('sudo ldconfig');
    mkdirSync(join(old, 'lib64'), {recursive: true});
  });
});

maybe('the driver from the libcuda the cache points to', () => {
  test('a libcuda.so.<version> outside the usual directories is found through /etc/ld.so.cache', async () => {
    const tmp = makeTempDir();
    try {
      const m = makeMachine(tmp.dir);
      const dir = join(m.sysroot, 'opt/nvidia-driver/lib');
      buildLib({out: join(dir, 'libcuda.so.545.23.08'), soname: 'libcuda.so.1', source: 'int cuInit(unsigned f){return (int)f;}\n'});
      write(join(m.sysroot, 'etc/ld.so.conf'), `${dir}\n`);
      // ldconfig creates the libcuda.so.1 link, as a driver install does.
      execFileSync('ldconfig', ['-C', join(m.sysroot, 'etc/ld.so.cache'), '-f', join(m.sysroot, 'etc/ld.so.conf')], {stdio: 'pipe'});
      const report = await runDoctor(m.ctx(), defaultDeps);
      expect(report.facts.driver).toMatchObject({version: '545.23.08', source: 'libcuda', newestFullySupported: '12.3.2'});
      // Shown as on the machine the root stands for.
      expect(report.facts.driver.evidence).toBe('/opt/nvidia-driver/lib/libcuda.so.1 -> /opt/nvidia-driver/lib/libcuda.so.545.23.08');
    } finally {
      tmp.cleanup();
    }
  });
});

maybe('cache entries behind the image\'s /etc/alternatives links (issue 37)', () => {
  test('Debian\'s libcuda.so.1 -> /etc/alternatives/... -> nvidia/current/: present in the image, so not stale; gone, it is', async () => {
    const tmp = makeTempDir();
    try {
      const m = makeMachine(tmp.dir);
      const lib = join(m.sysroot, 'usr/lib/x86_64-linux-gnu');
      const real = buildLib({out: join(lib, 'nvidia/current/libcuda.so.1'), soname: 'libcuda.so.1', source: 'int cuInit(unsigned f){return (int)f;}\n'});
      mkdirSync(join(m.sysroot, 'etc/alternatives'), {recursive: true});
      // Absolute links, as update-alternatives makes them: on the host they lead nowhere.
      symlinkSync('/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1', join(m.sysroot, 'etc/alternatives/libcuda.so.1-x86_64-linux-gnu'));
      symlinkSync('/etc/alternatives/libcuda.so.1-x86_64-linux-gnu', join(lib, 'libcuda.so.1'));
      write(join(m.sysroot, 'etc/ld.so.conf'), '/usr/lib/x86_64-linux-gnu\n');
      // The image's own view: ldconfig -r resolves the links in the image and writes the image's paths.
      execFileSync('ldconfig', ['-r', m.sysroot], {stdio: 'pipe'});
      const run = async () => {
        const ctx = m.ctx();
        const cache = await defaultDeps.readCache(join(m.sysroot, 'etc/ld.so.cache'));
        expect(cache?.entries.map((e) => `${e.key} => ${e.path}`)).toContain('libcuda.so.1 => /usr/lib/x86_64-linux-gnu/libcuda.so.1');
        return loaderView(ctx, inspectToolkits(ctx), cache?.entries).findings.find((f) => f.id === 'loader.cache-stale-missing');
      };
      expect(await run()).toBeUndefined();
      unlinkSync(real);
      expect((await run())?.evidence).toEqual(['libcuda.so.1 => /usr/lib/x86_64-linux-gnu/libcuda.so.1']);
    } finally {
      tmp.cleanup();
    }
  });
});
