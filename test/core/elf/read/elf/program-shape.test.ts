import {afterAll, beforeAll, describe, expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {copyFileSync, realpathSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {readElfSync, readProgramShapeSync} from '../../../../../src/core/elf/read/elf/index.js';
import {dynamicProgram} from '../../../../../src/core/elf/index.js';
import {buildLib, HAVE_GCC} from '../../fixtures.js';
import {testIf} from '../../../../helpers/skip.js';
import {makeTempDir, type TempDir} from '../../../../helpers/tmp.js';

/**
 * readProgramShapeSync reads only the program headers (what `dynamicProgram` asks of --exe and the
 * Python interpreter on every cached check, issue 42): it must say what the whole reader says.
 */
describe('the program shape read from the program headers alone', () => {
  let tmp: TempDir;
  const files: Record<string, string> = {};
  beforeAll(() => {
    tmp = makeTempDir('cudaenv-shape-');
    files.python = realpathSync('/usr/bin/python3');
    files.sh = realpathSync('/bin/sh');
    files.libc = realpathSync('/lib/x86_64-linux-gnu/libc.so.6');
    files.ldso = realpathSync('/lib64/ld-linux-x86-64.so.2');
    if (HAVE_GCC) {
      writeFileSync(join(tmp.dir, 'main.c'), 'int main(void){return 0;}\n');
      const s = spawnSync('gcc', ['-static', '-o', join(tmp.dir, 'static'), join(tmp.dir, 'main.c')]);
      if (s.status === 0) files.static = join(tmp.dir, 'static');
      files.lib = buildLib({out: join(tmp.dir, 'libx.so'), source: 'int x(void){return 1;}\n'});
      // --only-keep-debug: a PT_DYNAMIC with no bytes in the file, which ld.so skips.
      const d = spawnSync('objcopy', ['--only-keep-debug', files.python, join(tmp.dir, 'python.debug')]);
      if (d.status === 0) files.debug = join(tmp.dir, 'python.debug');
    }
    copyFileSync(files.sh, join(tmp.dir, 'sh-copy'));
    files.copy = join(tmp.dir, 'sh-copy');
  });
  afterAll(() => tmp?.cleanup());

  testIf(HAVE_GCC, 'needs gcc (apt-get install gcc)')('agrees with the whole reader on programs, libraries, ld.so, a static and a debug-only file', () => {
    expect(Object.keys(files)).toEqual(expect.arrayContaining(['python', 'sh', 'libc', 'ldso', 'static', 'lib', 'debug', 'copy']));
    for (const [name, path] of Object.entries(files)) {
      const whole = readElfSync(path);
      const shape = readProgramShapeSync(path);
      expect({name, type: shape.type, interp: shape.interp, dynamic: shape.dynamic}).toEqual({name, type: whole.type, interp: whole.interp, dynamic: whole.dynamic});
    }
    expect(readProgramShapeSync(files.static!).dynamic).toBe('none');
    expect(readProgramShapeSync(files.debug!).dynamic).toBe('debug-info');
  });

  testIf(HAVE_GCC, 'needs gcc (apt-get install gcc)')('dynamicProgram: a program is itself; a library, a static program, a script or nothing is null', () => {
    expect(dynamicProgram('/usr/bin/python3')).toBe(files.python);
    // glibc's libc.so.6 has an interpreter: it runs, and prints its version.
    expect(dynamicProgram(files.libc!)).toBe(files.libc);
    expect(dynamicProgram(files.lib!)).toBeNull();
    expect(dynamicProgram(files.static!)).toBeNull();
    const script = join(tmp.dir, 'shim');
    writeFileSync(script, '#!/bin/sh\nexec python3 "$@"\n', {mode: 0o755});
    expect(dynamicProgram(script)).toBeNull();
    expect(dynamicProgram(join(tmp.dir, 'missing'))).toBeNull();
  });

  test('a file cut short inside its program headers is an ElfError naming it', () => {
    const cut = join(tmp.dir, 'cut');
    writeFileSync(cut, Buffer.from(spawnSync('head', ['-c', '100', files.sh!]).stdout));
    expect(() => readProgramShapeSync(cut)).toThrow(cut);
    expect(dynamicProgram(cut)).toBeNull();
  });
});
