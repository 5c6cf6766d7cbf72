import type {CheckReport, CheckedObject, Problem} from './api.js';

/**
 * Text renderings of a CheckReport for `cudaenv check`: the problems with their explanations,
 * and the dependency tree with the resolved path and rule on every edge.
 */
const LABEL: Record<Problem['kind'], string> = {
  'not-found': 'not found',
  'version-not-found': 'version not found',
  'undefined-symbol': 'undefined symbol',
  'unversioned-undefined-symbol': 'unversioned undefined symbol',
};

export function formatProblems(report: CheckReport, options: {strict?: boolean} = {}): string[] {
  const lines: string[] = [];
  // Symbols of a library that is not found at all are a consequence, not news: count them.
  const missing = new Set(report.problems.filter((p) => p.kind === 'not-found').map((p) => `${p.object}\0${p.library}`));
  const consequences = new Map<string, number>();
  // Unversioned references are listed per object in one line: a plugin directory has hundreds.
  const unversioned = new Map<string, string[]>();
  for (const p of report.problems) {
    if (p.kind === 'undefined-symbol' && missing.has(`${p.object}\0${p.library}`)) {
      const key = `${p.object}\0${p.library}`;
      consequences.set(key, (consequences.get(key) ?? 0) + 1);
      continue;
    }
    if (p.kind === 'unversioned-undefined-symbol') {
      const list = unversioned.get(p.object) ?? [];
      list.push(p.symbol!);
      unversioned.set(p.object, list);
      continue;
    }
    lines.push(`error: ${LABEL[p.kind]}: ${p.summary}`);
    if (p.chosen) lines.push(`  picked:   ${p.chosen}`);
    if (p.shadowed) lines.push(`  shadowed: ${p.shadowed}`);
    lines.push(`  why:      ${p.explanation}`);
    if (p.fix) lines.push(`  fix:      ${p.fix}`);
  }
  for (const [key, n] of consequences) {
    const [object, library] = key.split('\0');
    lines.push(`error: ${n} undefined symbol${n === 1 ? '' : 's'} of ${object} would come from ${library}, which is not found (see above)`);
  }
  const level = options.strict ? 'error' : 'note';
  for (const [object, symbols] of unversioned) {
    const shown = symbols.slice(0, 4).join(', ') + (symbols.length > 4 ? `, ... (${symbols.length - 4} more)` : '');
    lines.push(`${level}: ${object} references ${symbols.length} unversioned symbol${symbols.length === 1 ? '' : 's'} nothing loaded defines: ${shown}`);
  }
  if (unversioned.size > 0) {
    lines.push(`${level}: unversioned undefined symbols are normal for plugins and Python extension modules (the loading program defines them);` +
      ` ${options.strict ? 'they fail this check because of --strict' : 'they fail only with --strict'}. Check extension modules with --exe "$(command -v python3)".`);
  }
  return lines;
}

export function formatSkipped(report: CheckReport): string[] {
  const lines: string[] = [];
  const other: string[] = [];
  for (const s of report.skipped) {
    // Linker scripts, damaged ELF files and failed preloads deserve a line each; the rest (archives, headers) a count.
    if (/linker script|damaged ELF|empty file|LD_PRELOAD|class|machine|executable/.test(s.reason)) lines.push(`note: skipped ${s.path}: ${s.reason}`);
    else other.push(s.path);
  }
  if (other.length > 0) lines.push(`note: skipped ${other.length} other file${other.length === 1 ? '' : 's'} that ${other.length === 1 ? 'is' : 'are'} not ELF shared objects (--json lists them)`);
  return lines;
}

export function formatTree(report: CheckReport): string[] {
  const byPath = new Map<string, CheckedObject>(report.objects.map((o) => [o.path, o]));
  const lines: string[] = [];
  const expanded = new Set<string>();
  const walk = (obj: CheckedObject, prefix: string, ancestors: Set<string>): void => {
    obj.needed.forEach((edge, i) => {
      const last = i === obj.needed.length - 1;
      const branch = last ? '└── ' : '├── ';
      const rule = edge.via === null ? 'not found' : edge.rule ? `${edge.via}: ${edge.rule}` : edge.via;
      const target = edge.path ?? 'not found';
      const child = edge.path ? byPath.get(edge.path) : undefined;
      // A name already loaded is not searched again: its dependencies hang where it was first loaded.
      const repeat = edge.via !== 'loaded' && edge.via !== 'preload' && child && (expanded.has(child.path) || ancestors.has(child.path)) && child.needed.length > 0;
      lines.push(`${prefix}${branch}${edge.name} => ${target} [${rule}]${repeat ? ' (dependencies shown above)' : ''}`);
      for (const c of edge.passedOver ?? []) lines.push(`${prefix}${last ? '    ' : '│   '}  (passed over ${c.path}: ${c.reason})`);
      if (child && !repeat && edge.via !== 'loaded') {
        expanded.add(child.path);
        walk(child, prefix + (last ? '    ' : '│   '), new Set([...ancestors, child.path]));
      }
    });
  };
  for (const root of report.checked) {
    const obj = byPath.get(root);
    if (!obj) continue;
    lines.push(root);
    walk(obj, '', new Set([root]));
  }
  return lines;
}
