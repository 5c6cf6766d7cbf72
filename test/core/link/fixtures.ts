import {spawnSync} from 'node:child_process';
import {chmodSync, mkdirSync, writeFileSync} from 'node:fs';
import {join} from 'node:path';
import {makeFakeToolkit} from '../../helpers/toolkit.js';
import {pathsFor, type StorePaths} from '../../../src/core/store/paths.js';

/** A store with installed (real directory) toolkits for `labels`. */
export function makeStore(root: string, labels: string[]): StorePaths {
  const paths = pathsFor(root);
  for (const label of labels) makeFakeToolkit(join(paths.versions, label), {version: label});
  return paths;
}


/** A real shared library with the given soname, built with gcc. */
export function buildLibrary(dir: string, soname: string): string {
  mkdirSync(dir, {recursive: true});
  const src = join(dir, `${soname}.c`);
  writeFileSync(src, `int ${soname.replace(/\W/g, '_')}_fn(void) { return 1; }\n`);
  const out = join(dir, soname);
  const r = spawnSync('gcc', ['-shared', '-fPIC', `-Wl,-soname,${soname}`, '-o', out, src], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error(`gcc failed: ${r.stderr}`);
  return out;
}

/** Opens a temporary tree to other users (mkdtemp makes it 0700). */
export function openUp(dir: string): void {
  chmodSync(dir, 0o755);
}
