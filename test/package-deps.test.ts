/**
 * The package carries (bundleDependencies) exactly what cudaenv's code imports: a dependency that
 * nothing imports only makes every install larger (execa and tar were declared and bundled for a
 * while, imported by no file: 0.7 MB of the package file, 3 MB installed). Imports are read by
 * TypeScript's pre-processor, as test/layering.test.ts reads them.
 */
import {expect, test} from '@jest/globals';
import {spawnSync} from 'node:child_process';
import {readdirSync, readFileSync} from 'node:fs';
import {join, relative, sep} from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return /\.(ts|mjs|cjs|js)$/.test(e.name) ? [path] : [];
  });
}

/** The package a bare specifier names: `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:') || specifier.startsWith('/')) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

test('every runtime dependency is imported by the code the package runs (src/, bin/), and every one imported is declared', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {dependencies: Record<string, string>; devDependencies: Record<string, string>; bundleDependencies: string[]};
  const declared = Object.keys(pkg.dependencies).sort();
  const imported = new Set<string>();
  const undeclared: string[] = [];
  for (const file of [...sources(join(root, 'src')), ...sources(join(root, 'bin'))]) {
    // src/action/ is bundled into dist-action/ (scripts/build-action.mjs) with the devDependencies it imports (@actions/*).
    const bundledApart = file.startsWith(join(root, 'src', 'action') + sep);
    for (const f of ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles) {
      const name = packageOf(f.fileName);
      if (!name) continue;
      imported.add(name);
      if (!declared.includes(name) && !(bundledApart && Object.hasOwn(pkg.devDependencies, name))) undeclared.push(`${relative(root, file)}: ${name}`);
    }
  }
  expect(declared.filter((d) => !imported.has(d))).toEqual([]);
  expect(undeclared).toEqual([]);
  expect([...pkg.bundleDependencies].sort()).toEqual(declared);
});

/**
 * A clone outside this workplace has no ../shared (issue 34 item 7): no tracked file may read from it
 * or send a reader there. Sources cite the primary documents (the gABI, glibc's and NVIDIA's docs).
 */
test('no tracked file names the workplace\'s ../shared folder', () => {
  const tracked = spawnSync('git', ['ls-files', '-z'], {cwd: root, encoding: 'utf8'});
  if (tracked.status !== 0) throw new Error(`git ls-files failed in ${root}: ${tracked.stderr}`);
  const offenders = tracked.stdout.split('\0').filter((f) => f && f !== 'test/package-deps.test.ts').filter((f) => {
    let text: string;
    try {
      text = readFileSync(join(root, f), 'utf8');
    } catch {
      return false; // a tracked file deleted in the work tree
    }
    return /(^|[^\w/.-])(\.\.\/)+shared\/|(^|[\s`'"(])shared\/(docs|redist-manifests)\//m.test(text);
  });
  expect(offenders).toEqual([]);
});
