import {afterEach, beforeEach, describe, expect, test} from '@jest/globals';
import {execFileSync} from 'node:child_process';
import {mkdirSync, symlinkSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {findVersionFile, parseVersionFileText, readVersionFile, replaceSpecInText} from '../../../src/core/versions/version-file.js';
import {makeTempDir} from '../../helpers/tmp.js';

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({dir, cleanup} = makeTempDir());
});
afterEach(() => cleanup());

describe('.cuda-version', () => {
  test('the first non-blank, non-comment line is the spec; key=value lines follow', () => {
    const f = parseVersionFileText('/p/.cuda-version', '\n# pinned for the build\n\n  12.4  \ncudnn=9\nflavour=x\n');
    expect(f.spec).toMatchObject({kind: 'version', text: '12.4'});
    expect(f.settings).toEqual({cudnn: '9', flavour: 'x'});
    expect(f.warnings).toEqual(['/p/.cuda-version: line 6: unknown key "flavour" ignored']);
  });

  test('a byte-order mark or a no-break space is refused, as the shell hooks and shims refuse it', () => {
    writeFileSync(join(dir, '.cuda-version'), '\ufeff12.4\n');
    expect(() => readVersionFile(join(dir, '.cuda-version'))).toThrow(/starts with a byte-order mark \(BOM\); save it as UTF-8 without one/);
    expect(() => parseVersionFileText('f', '12.4\u00a0\n')).toThrow(/line 1 .* is not a CUDA version spec/);
    expect(parseVersionFileText('f', ' \t12.4 \t\n').spec.text).toBe('12.4');
  });

  test('local over an existing file changes only the spec line (CRLF kept)', () => {
    expect(replaceSpecInText('# pinned\r\n\r\n  12.3  \r\ncudnn=9\r\n', '12.4')).toBe('# pinned\r\n\r\n12.4\r\ncudnn=9\r\n');
    expect(replaceSpecInText('12.3\ncudnn=9', '12')).toBe('12\ncudnn=9');
  });

  test('CRLF line endings are accepted', () => {
    expect(parseVersionFileText('f', '12.4.1\r\ncudnn=9\r\n').spec.text).toBe('12.4.1');
  });

  test.each([
    ['$(touch pwned)', /line 1 .* is not a CUDA version spec/],
    ['12.4; touch pwned', /not a CUDA version spec/],
    ['`touch pwned`', /not a CUDA version spec/],
    ['12.4\nexport LD_PRELOAD=/tmp/x.so', /line 2 .* is neither a comment nor key=value/],
    ['12.4\ncudnn=$(id)', /neither a comment nor key=value/],
    ['12.4\x1b[31m', /control characters/],
    ['', /holds no version spec/],
    ['# only a comment\n', /holds no version spec/],
  ])('refuses %j with one line naming the file', (text, message) => {
    expect(() => parseVersionFileText('/proj/.cuda-version', text)).toThrow(message);
    try {
      parseVersionFileText('/proj/.cuda-version', text);
    } catch (error) {
      expect((error as Error).message.startsWith('/proj/.cuda-version: ')).toBe(true);
      expect((error as Error).message).not.toContain('\n');
    }
  });

  test('refuses binary, oversized, directory and FIFO files without hanging', () => {
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, '.cuda-version'), Buffer.from([0x31, 0x32, 0x00, 0x0a, 0x7f, 0x45, 0x4c, 0x46]));
    expect(() => readVersionFile(join(bin, '.cuda-version'))).toThrow(/control characters or binary data/);

    const big = join(dir, 'big');
    mkdirSync(big);
    writeFileSync(join(big, '.cuda-version'), `12.4\n${'#'.repeat(5000)}\n`);
    expect(() => readVersionFile(join(big, '.cuda-version'))).toThrow(/5006 bytes; a version file holds at most 4096/);

    const d = join(dir, 'd');
    mkdirSync(join(d, '.cuda-version'), {recursive: true});
    expect(() => readVersionFile(join(d, '.cuda-version'))).toThrow(/is a directory/);

    const fifo = join(dir, 'fifo');
    mkdirSync(fifo);
    execFileSync('mkfifo', [join(fifo, '.cuda-version')]);
    expect(() => readVersionFile(join(fifo, '.cuda-version'))).toThrow(/not a regular file/);

    const latin1 = join(dir, 'latin1');
    mkdirSync(latin1);
    writeFileSync(join(latin1, '.cuda-version'), Buffer.from('12.4\n# caf\xe9\n', 'latin1'));
    expect(() => readVersionFile(join(latin1, '.cuda-version'))).toThrow(/not UTF-8/);

    const dev = join(dir, 'dev');
    mkdirSync(dev);
    symlinkSync('/dev/zero', join(dev, '.cuda-version'));
    expect(() => readVersionFile(join(dev, '.cuda-version'))).toThrow(/not a regular file/);
  });

  test('the nearest file wins, looking upward from the directory', () => {
    const outer = join(dir, 'outer');
    const inner = join(outer, 'inner', 'deep');
    mkdirSync(inner, {recursive: true});
    writeFileSync(join(outer, '.cuda-version'), '11.8\n');
    expect(findVersionFile(inner)).toBe(join(outer, '.cuda-version'));
    writeFileSync(join(outer, 'inner', '.cuda-version'), '12.4\n');
    expect(findVersionFile(inner)).toBe(join(outer, 'inner', '.cuda-version'));
    expect(readVersionFile(findVersionFile(inner)!).spec.text).toBe('12.4');
  });
});
