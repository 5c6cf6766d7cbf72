/**
 * The import arrows of src/ run one way (docs/architecture.md): no file reaches itself through
 * its imports, an area imports only areas of lower layers, a stage of the loader model only the
 * stages before it, and code outside src/core/elf/ only the model's public entries. Imports are
 * read by TypeScript's own pre-processor (static, `export ... from`, `import type` and dynamic
 * `import()` alike), so an arrow cannot hide in a form a regular expression would miss.
 */
import {describe, expect, test} from '@jest/globals';
import {readdirSync, readFileSync} from 'node:fs';
import {dirname, join, normalize, relative} from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');
const src = join(root, 'src');

/** Lowest first. An area may import only areas of lower layers (and its own files). */
const LAYERS: string[][] = [
  ['core/text', 'core/code-phases.ts'],
  ['core/errors.ts', 'core/fs-kind.ts', 'core/fatal-cleanup.ts', 'core/import-package.ts', 'core/heap-flags.ts'],
  ['core/safe-fs'],
  ['core/versions'],
  ['core/elf', 'core/system'],
  ['core/store'],
  ['core/selection'],
  ['core/shell'],
  ['core/toolkits', 'core/link'],
  ['core/remote', 'core/conda', 'core/cluster', 'core/completion'],
  ['core/doctor', 'core/self'],
  ['cli', 'hooks', 'action'],
  ['fast-path.ts'],
  ['commands'],
  ['start.ts'],
  ['exe'],
];

/** The loader model's stages in the order data flows; report-types.ts is shared by all. */
const STAGES = ['read', 'cache', 'search', 'bind', 'runtime', 'gpu', 'explain'];
const ELF = 'core/elf';
const ELF_ENTRIES = new Set(['core/elf/index.ts', 'core/elf/api.ts']);

function sources(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') ? [relative(src, path)] : [];
  });
}

/** Every file of src/ each file imports, as paths relative to src/. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(src)) {
    const info = ts.preProcessFile(readFileSync(join(src, file), 'utf8'), true, true);
    const targets = info.importedFiles
      .map((f) => f.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => normalize(join(dirname(file), name)).replace(/\.js$/, '.ts'))
      .filter((path) => path.endsWith('.ts'));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

const graph = importGraph();

function areaOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'core') return parts.length > 2 ? `core/${parts[1]}` : file;
  return parts.length > 1 ? parts[0] : file;
}

function layerOf(area: string): number {
  return LAYERS.findIndex((layer) => layer.includes(area));
}

/** The stage of a file inside elf/: its first folder's place in STAGES; -1 for report-types.ts, STAGES.length for the files that run the pipeline. */
function stageOf(file: string): number {
  const inside = file.slice(ELF.length + 1).split('/');
  if (inside.length === 1) return inside[0] === 'report-types.ts' ? -1 : STAGES.length;
  const stage = STAGES.indexOf(inside[0]);
  if (stage < 0) throw new Error(`src/${file} lies in elf/${inside[0]}/, which is not a stage (${STAGES.join(', ')})`);
  return stage;
}

describe('the import arrows of src/', () => {
  test('every import names a file that exists (the graph below is complete)', () => {
    const missing = [...graph].flatMap(([file, targets]) => targets.filter((t) => !graph.has(t)).map((t) => `${file} -> ${t}`));
    expect(missing).toEqual([]);
  });

  test('no file reaches itself through its imports', () => {
    // Tarjan's strongly connected components: every component of more than one file is a circle.
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const circles: string[][] = [];
    let next = 0;
    const visit = (v: string) => {
      index.set(v, next);
      low.set(v, next++);
      stack.push(v);
      onStack.add(v);
      for (const w of graph.get(v) ?? []) {
        if (!index.has(w)) {
          visit(w);
          low.set(v, Math.min(low.get(v)!, low.get(w)!));
        } else if (onStack.has(w)) {
          low.set(v, Math.min(low.get(v)!, index.get(w)!));
        }
      }
      if (low.get(v) === index.get(v)) {
        const component: string[] = [];
        let w: string;
        do {
          w = stack.pop()!;
          onStack.delete(w);
          component.push(w);
        } while (w !== v);
        if (component.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(component.sort());
      }
    };
    for (const file of graph.keys()) if (!index.has(file)) visit(file);
    expect(circles).toEqual([]);
  });

  test('every area has a layer, and imports only areas of lower layers', () => {
    const unplaced = [...new Set([...graph.keys()].map(areaOf))].filter((a) => layerOf(a) < 0);
    expect(unplaced).toEqual([]);
    const upward = [...graph].flatMap(([file, targets]) => targets
      .filter((t) => areaOf(t) !== areaOf(file) && layerOf(areaOf(t)) >= layerOf(areaOf(file)))
      .map((t) => `${file} (${areaOf(file)}) -> ${t} (${areaOf(t)})`));
    expect(upward).toEqual([]);
  });

  test('a stage of the loader model imports only stages before it and the shared types', () => {
    const backward = [...graph]
      .filter(([file]) => file.startsWith(`${ELF}/`))
      .flatMap(([file, targets]) => targets
        .filter((t) => t.startsWith(`${ELF}/`) && stageOf(t) > stageOf(file))
        .map((t) => `${file} -> ${t}`));
    expect(backward).toEqual([]);
  });

  test('code outside the loader model uses only its public entries (elf/index.ts, elf/api.ts)', () => {
    const past = [...graph]
      .filter(([file]) => !file.startsWith(`${ELF}/`))
      .flatMap(([file, targets]) => targets.filter((t) => t.startsWith(`${ELF}/`) && !ELF_ENTRIES.has(t)).map((t) => `${file} -> ${t}`));
    expect(past).toEqual([]);
  });

  test('the light entry (elf/api.ts) loads, before any file must be checked, nothing of the later stages', () => {
    // Issue 42: a check the verdict cache answers is mostly Node's start; the search, bind, run-time,
    // GPU and explain stages are loaded (dynamic import) only for a file it must check
    // (check-one.ts), or asked about (--gpu, --tree). Static value imports only: `import type`
    // loads nothing, and an import() runs when it is reached.
    const staticImports = (file: string): string[] => {
      const source = ts.createSourceFile(file, readFileSync(join(src, file), 'utf8'), ts.ScriptTarget.Latest);
      const out: string[] = [];
      for (const node of source.statements) {
        const spec = (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly) || (ts.isExportDeclaration(node) && !node.isTypeOnly)
          ? node.moduleSpecifier : undefined;
        if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue;
        // `import {type A, type B} from` loads nothing either.
        const clause = ts.isImportDeclaration(node) ? node.importClause : undefined;
        const bindings = clause?.namedBindings;
        if (bindings && ts.isNamedImports(bindings) && !clause?.name && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly)) continue;
        out.push(normalize(join(dirname(file), spec.text)).replace(/\.js$/, '.ts'));
      }
      return out;
    };
    const loaded = new Set<string>();
    const todo = [`${ELF}/api.ts`];
    while (todo.length > 0) {
      const file = todo.pop()!;
      if (loaded.has(file)) continue;
      loaded.add(file);
      todo.push(...staticImports(file));
    }
    const later = ['search', 'bind', 'runtime', 'gpu', 'explain'];
    // What a cached check still needs of those folders: listing the targets, LD_LIBRARY_PATH's entries,
    // the run-time variables of the cache key, the interpreter's shape, and the report's text.
    const light = new Set(['search/list-targets.ts', 'search/search-path.ts', 'search/dynamic-program.ts', 'runtime/runtime-env.ts',
      'explain/format-report.ts', 'explain/format-gpu.ts', 'explain/found-elsewhere.ts'].map((f) => `${ELF}/${f}`));
    const heavy = [...loaded].filter((f) => f.startsWith(`${ELF}/`) && later.includes(f.slice(ELF.length + 1).split('/')[0]!) && !light.has(f));
    expect(heavy).toEqual([]);
    // And the model is reached at all: check-files.ts imports check-one.ts when a file must be checked.
    expect(graph.get(`${ELF}/check-files.ts`)).toContain(`${ELF}/check-one.ts`);
    expect(loaded.has(`${ELF}/check-one.ts`)).toBe(false);
  });

  test('elf/ keeps at most eight files of its own, and each stage folder says what it takes and gives', () => {
    const elf = join(src, ELF);
    const own = readdirSync(elf, {withFileTypes: true}).filter((e) => e.isFile());
    expect(own.length).toBeLessThanOrEqual(8);
    for (const stage of STAGES) {
      const readme = readFileSync(join(elf, stage, 'README.md'), 'utf8');
      expect(readme).toMatch(/^Takes:/m);
      expect(readme).toMatch(/^Gives:/m);
    }
  });
});
