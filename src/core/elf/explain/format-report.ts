import {isFailing, type CheckReport, type CheckedObject, type Problem} from '../report-types.js';
import {EMPTY} from '../search/list-targets.js';

/**
 * Text renderings of a CheckReport for `cudaenv check`: the problems with their explanations,
 * and the dependency tree with the resolved path and rule on every edge.
 */
const LABEL: Record<Problem['kind'], string> = {
  'not-found': 'not found',
  'noexec-mount': 'noexec file system',
  'executable-stack': 'executable stack',
  'version-not-found': 'version not found',
  'loader-abort': 'loader failure',
  'cpu-isa-level': 'CPU ISA level',
  'undefined-symbol': 'undefined symbol',
  'unversioned-undefined-symbol': 'unversioned undefined symbol',
  'static-tls': 'static TLS',
  'cuda-stub': 'CUDA driver stub',
  'driver-mismatch': 'driver mismatch',
  'driver-too-old': 'driver too old',
  'mixed-release': 'mixed releases',
};

/** Per-object note lines shown for unversioned references before the rest are counted in one line. */
const NOTE_OBJECTS = 5;
/** Names shown in one line before "and N more". */
const SHOWN = 6;

function list(names: string[]): string {
  return names.slice(0, SHOWN).join(', ') + (names.length > SHOWN ? `, ... (${names.length - SHOWN} more)` : '');
}

/**
 * The problems of one object with one picked library, in one block: a shadowing that breaks eight
 * symbols is one problem for the user (one entry to drop), not eight near-identical blocks.
 * `--json` keeps every problem.
 */
function groupBlock(group: Problem[], strict: boolean, files: ReadonlyMap<string, string>): string[] {
  const first = group[0];
  const lines: string[] = [];
  // A feature's loss (the profiler, a GPU on a build host) is said, and fails only with --strict.
  const level = isFailing(first, strict) ? 'error' : 'warning';
  if (first.kind === 'cpu-isa-level' && group.length > 1) return isaBlock(group);
  if (group.length === 1) {
    // A not-found with a picked file is a file the loader stops at (damaged, not ELF, misaligned): it was found.
    lines.push(`${level}: ${first.kind === 'not-found' && first.chosen ? 'cannot load' : LABEL[first.kind]}: ${first.summary}`);
  } else {
    const versions = [...new Set(group.filter((p) => p.kind === 'version-not-found').map((p) => p.version!))];
    const symbols = [...new Set(group.filter((p) => p.kind === 'undefined-symbol').map((p) => p.symbol!))];
    const base = first.summary.replace(/, which (?:lacks|does not define version) [^,;]*$/, '');
    const parts = [
      ...(versions.length > 0 ? [`does not define version${versions.length === 1 ? '' : 's'} ${versions.join(', ')}`] : []),
      ...(symbols.length > 0 ? [`lacks ${symbols.length} symbol${symbols.length === 1 ? '' : 's'}: ${list(symbols)}`] : []),
    ];
    lines.push(`${level}: ${LABEL[first.kind]}: ${base}, which ${parts.join(' and ')}${first.when === 'first-call' ? ' (bound at their first call)' : ''}`);
  }
  if (first.chosen) lines.push(`  picked:   ${withFile(first.chosen, files)}`);
  if (first.shadowed) lines.push(`  shadowed: ${first.shadowed}`);
  lines.push(`  why:      ${first.explanation}`);
  if (group.length > 1) lines.push(`  all:      ${group.length} problems of this object with this file (--json lists each)`);
  if (first.fix) lines.push(`  fix:      ${first.fix}`);
  return lines;
}

/**
 * Objects built for an ISA level the CPU lacks, in one block: a tree built for x86-64-v4 fails on a
 * v3 CPU in every library, and the user's fix (a build for this CPU, or another CPU) is one.
 */
function isaBlock(group: Problem[]): string[] {
  const first = group[0];
  const level = /is built for (.+)$/.exec(first.summary)?.[1] ?? first.summary;
  return [
    `error: ${LABEL[first.kind]}: ${group.length} objects are built for ${level.replace(/: the loader stops with/, ': the loader stops at the first with')}`,
    `  objects:  ${list(group.map((p) => p.object))}`,
    `  why:      ${first.explanation}`,
    ...(first.fix ? [`  fix:      ${first.fix.replace(/^install a build of \S+ for/, `install builds of these ${group.length} objects for`).replace(/^reinstall or rebuild \S+: its mark names (.*) load it$/, 'reinstall or rebuild them: their marks name $1 load them')}`] : []),
  ];
}

export function formatProblems(report: CheckReport, options: {strict?: boolean} = {}): string[] {
  const lines: string[] = [];
  // Symbols of a library that is not found at all are a consequence, not news: count them.
  // (a library on a noexec file system is as absent to the loader)
  const missing = new Map(report.problems.filter((p) => p.kind === 'not-found' || p.kind === 'noexec-mount').map((p) => [`${p.object}\0${p.library}`, p.kind]));
  const missingLevel = new Map(report.problems.filter((p) => p.kind === 'not-found' || p.kind === 'noexec-mount')
    .map((p) => [`${p.object}\0${p.library}`, isFailing(p, options.strict ?? false) ? 'error' : 'warning']));
  const consequences = new Map<string, number>();
  // Unversioned references are listed per object in one line: a plugin directory has hundreds.
  const unversioned = new Map<string, string[]>();
  // One block per object and picked file (in the order the problems come: the loader's order).
  const groups = new Map<string, Problem[]>();
  for (const p of report.problems) {
    if (p.kind === 'undefined-symbol' && missing.has(`${p.object}\0${p.library}`)) {
      const key = `${p.object}\0${p.library}`;
      consequences.set(key, (consequences.get(key) ?? 0) + 1);
      continue;
    }
    if (p.kind === 'unversioned-undefined-symbol') {
      const key = `${p.object}\0${p.when ?? ''}`;
      const names = unversioned.get(key) ?? [];
      names.push(p.symbol!);
      unversioned.set(key, names);
      continue;
    }
    // One block for every object built for the same ISA level (the summary past the object's name says which).
    const key = p.kind === 'cpu-isa-level' ? `cpu-isa-level\0${p.summary.replace(/^.*? is built for /, '')}`
      : p.kind !== 'not-found' && p.kind !== 'noexec-mount' && p.chosen ? `${p.object}\0${p.chosen}\0${p.when ?? ''}` : `${groups.size}\0single`;
    const group = groups.get(key) ?? [];
    group.push(p);
    groups.set(key, group);
  }
  const files = imageFiles(report);
  for (const group of groups.values()) lines.push(...groupBlock(group, options.strict ?? false, files));
  for (const [key, n] of consequences) {
    const [object, library] = key.split('\0');
    lines.push(`${missingLevel.get(key) ?? 'error'}: ${n} undefined symbol${n === 1 ? '' : 's'} of ${object} would come from ${library}, which ${missing.get(key) === 'noexec-mount' ? 'the loader cannot map' : 'is not found'} (see above)`);
  }
  const level = options.strict ? 'error' : 'note';
  // As notes they are condensed (a directory of plugins has hundreds); as --strict errors each is listed.
  const shown = options.strict ? [...unversioned] : [...unversioned].slice(0, NOTE_OBJECTS);
  for (const [key, symbols] of shown) {
    const [object, when] = key.split('\0');
    lines.push(`${level}: ${object} references ${symbols.length} unversioned symbol${symbols.length === 1 ? '' : 's'} nothing loaded defines: ${symbols.slice(0, 4).join(', ')}${symbols.length > 4 ? `, ... (${symbols.length - 4} more)` : ''}` +
      `${when === 'first-call' ? ' (bound at their first call: the program fails only if it calls them)' : when === 'start' ? ' (bound while the program starts)' : ''}`);
  }
  const rest = [...unversioned].slice(shown.length);
  if (rest.length > 0) {
    const n = rest.reduce((sum, [, symbols]) => sum + symbols.length, 0);
    lines.push(`${level}: ${rest.length} more object${rest.length === 1 ? '' : 's'} reference ${n} unversioned symbol${n === 1 ? '' : 's'} nothing loaded defines (--json lists them)`);
  }
  if (unversioned.size > 0) {
    lines.push(`${level}: unversioned undefined symbols are normal for plugins and Python extension modules (the loading program defines them);` +
      ` ${options.strict ? 'they fail this check because of --strict' : 'they fail only with --strict'}. Check extension modules with --exe "$(command -v python3)".`);
  }
  return lines;
}

/** A file name a shared object goes by: libfoo.so, libfoo.so.1.2, foo.cpython-311-x86_64-linux-gnu.so. */
const LIBRARY_NAME = /\.so(\.\d+)*$/;

/** The reason check.ts gives a preload ld.so refuses; its path is "NAME: ld.so's reason". */
const PRELOAD_REFUSED = /^(LD_PRELOAD|\/etc\/ld\.so\.preload) entry cannot be preloaded: ignored \(as ld\.so does\)$/;

/**
 * A preload ld.so refuses does not stop a program, but every program started here prints ld.so's
 * ERROR line first (cudaenv's own launcher's /bin/sh too), which is what brings a person to
 * `check`: the note quotes that line (rtld.c's wording, ld.so's reason) and says what to change.
 * A name cannot hold ': ' (ld.so splits both lists at ':' and blanks), so the first one ends it.
 */
function preloadNote(from: string, path: string): string {
  const cut = path.indexOf(': ');
  const [name, why] = cut < 0 ? [path, 'cannot open shared object file'] : [path.slice(0, cut), path.slice(cut + 2)];
  const fix = from === 'LD_PRELOAD' ? 'remove it from LD_PRELOAD' : `remove its line from ${from} (as root)`;
  return `note: ${from} names ${name}, which ld.so cannot preload (${why}): programs run without it, each first printing "ERROR: ld.so: object '${name}' from ${from} cannot be preloaded (${why}): ignored."; ${fix}`;
}

/** The objects whose path is a link of the image that leads nowhere on the host, with the file it names there (CheckedObject.file). */
function imageFiles(report: CheckReport): Map<string, string> {
  return new Map(report.objects.filter((o) => o.file).map((o) => [o.path, o.file!]));
}

/** "PATH (rule)" with such a PATH followed by " -> FILE": the one path of the two a person can open on the host. */
function withFile(text: string, files: ReadonlyMap<string, string>): string {
  for (const [path, file] of files) if (text === path || text.startsWith(`${path} `)) return `${path} -> ${file}${text.slice(path.length)}`;
  return text;
}

export function formatSkipped(report: CheckReport): string[] {
  const lines: string[] = [];
  const other: string[] = [];
  // Files that deserve a word (linker scripts, damaged ELF files, failed preloads), grouped by reason
  // when several share it: a package tree has dozens of executables or scripts beside its libraries.
  const byReason = new Map<string, string[]>();
  for (const s of report.skipped) {
    // An empty file matters where a library should be (a copy cut short); an empty __init__.py
    // or py.typed in a package tree checked with --recursive is one more file that is no library.
    const worthAWord = s.reason === EMPTY ? LIBRARY_NAME.test(s.path) : /linker script|damaged ELF|cannot be preloaded|class|machine|executable/.test(s.reason);
    if (worthAWord) {
      const paths = byReason.get(s.reason) ?? [];
      paths.push(s.path);
      byReason.set(s.reason, paths);
    } else {
      other.push(s.path);
    }
  }
  for (const [reason, paths] of byReason) {
    const preload = PRELOAD_REFUSED.exec(reason);
    if (preload) {
      for (const path of paths) lines.push(preloadNote(preload[1], path));
      continue;
    }
    if (paths.length <= 2) for (const path of paths) lines.push(`note: skipped ${path}: ${reason}`);
    else lines.push(`note: skipped ${paths.length} files, each ${reason}: ${list(paths)}`);
  }
  if (other.length > 0) lines.push(`note: skipped ${other.length} other file${other.length === 1 ? ' that is not an ELF shared object' : 's that are not ELF shared objects'} (--json lists them)`);
  return lines;
}

/** `gpuCode`: the GPU code of an object in words, shown after it (`check --tree`, issue 33); omitted: none shown. */
export function formatTree(report: CheckReport, gpuCode?: (path: string) => string | undefined): string[] {
  const code = (path: string | null) => {
    const text = path && gpuCode ? gpuCode(path) : undefined;
    return text ? ` {GPU code: ${text}}` : '';
  };
  const byPath = new Map<string, CheckedObject>(report.objects.map((o) => [o.path, o]));
  const files = imageFiles(report);
  const lines: string[] = [];
  const expanded = new Set<string>();
  const walk = (obj: CheckedObject, prefix: string, ancestors: Set<string>): void => {
    obj.needed.forEach((edge, i) => {
      const last = i === obj.needed.length - 1;
      const branch = last ? '└── ' : '├── ';
      // "ld.so.cache: ld.so.cache (/etc/ld.so.cache)" says it twice: a rule that starts with its kind stands alone.
      let rule = edge.via === null ? 'not found' : edge.rule ? (edge.rule.startsWith(edge.via) || edge.rule.startsWith('already ') ? edge.rule : `${edge.via}: ${edge.rule}`) : edge.via;
      // A filtee is loaded like DT_NEEDED; a missing DT_AUXILIARY one is not a failure.
      if (edge.filter === 'filter') rule = `DT_FILTER, ${rule}`;
      else if (edge.filter === 'auxiliary') rule = edge.path === null ? 'DT_AUXILIARY, not found: the loader goes on without it' : `DT_AUXILIARY, ${rule}`;
      if (edge.reached === false) {
        lines.push(`${prefix}${branch}${edge.name} (never searched: the loader stopped before it)`);
        return;
      }
      if (edge.error !== undefined) rule = `the loader stops here, ${edge.rule ?? 'found'}`;
      if (edge.dlopen) rule = `dlopen ${edge.dlopen.when}${edge.dlopen.impact === 'library' ? '' : `, ${edge.dlopen.impact}`}, ${rule}`;
      const target = edge.error === undefined ? (edge.path ? withFile(edge.path, files) : 'not found') : edge.path === null ? edge.error : `${edge.path} (${edge.error})`;
      const child = edge.path ? byPath.get(edge.path) : undefined;
      // A name already loaded is not searched again: its dependencies hang where it was first loaded.
      const repeat = edge.via !== 'loaded' && edge.via !== 'preload' && child && (expanded.has(child.path) || ancestors.has(child.path)) && child.needed.length > 0;
      lines.push(`${prefix}${branch}${edge.name} => ${target} [${rule}]${code(edge.error === undefined ? edge.path : null)}${repeat ? ' (dependencies shown above)' : ''}`);
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
    lines.push(`${root}${code(root)}`);
    walk(obj, '', new Set([root]));
  }
  return lines;
}
