import {realpathSync} from 'node:fs';
import {basename, dirname, normalize, relative} from 'node:path';
import {splitLdLibraryPath, type CheckReport, type Problem} from '../elf/api.js';
import {quoteSh} from '../text/quote.js';
import {DRIVER_KINDS, engineOptions, problemKey, severityOf, type CheckFn, type Reported} from './libraries.js';
import type {LdEntryFact} from './env-vars.js';
import type {DoctorContext, Finding} from './types.js';

export type {CheckFn} from './libraries.js';

export interface Shadow {
  /** The pip-wheel library whose dependency is redirected. */
  object: string;
  library: string;
  /** What the loader binds with this LD_LIBRARY_PATH. */
  chosen: string;
  /** What it binds without the CUDA entries of LD_LIBRARY_PATH (null: nothing). */
  instead: string | null;
}

export interface EntryVerdict {
  entry: string;
  shadows: Shadow[];
  /** Dependencies bound through the entry that nothing binds without it (`instead` null): the entry is needed. */
  supplies: Shadow[];
  problems: Problem[];
}

export interface ShadowingResult {
  /** One verdict per CUDA entry of LD_LIBRARY_PATH. */
  verdicts: EntryVerdict[];
  /** Problems of the Python environment's libraries that fail now and remain without those entries. */
  baselineProblems: Problem[];
  findings: Finding[];
  /** The Python environment's libraries checked under this environment (what `check` gives them). */
  current?: CheckReport;
  /** The problems these findings report, by key (libraries.ts problemKey), with the finding's id. */
  reported: Reported;
}

/** Error when a problem among them fails `check`, a warning when they are a feature's loss only (one rule with check). */
function worst(problems: Problem[]): 'error' | 'warning' {
  return problems.some((p) => severityOf(p) === 'error') ? 'error' : 'warning';
}

const trimSlash = (p: string): string => (p.length > 1 ? p.replace(/\/+$/, '') : p);

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** Each object's dependency edges by (object, name): the file bound, or null where the search found none; unreached edges are left out. */
function edgeMap(report: CheckReport): Map<string, string | null> {
  const map = new Map<string, string | null>();
  for (const o of report.objects) for (const e of o.needed) if (e.reached !== false) map.set(`${o.path}\0${e.name}`, e.path);
  return map;
}

function isUnderAny(path: string, dirs: string[]): boolean {
  return dirs.some((d) => path === d || path.startsWith(`${d}/`));
}

/** The LD_LIBRARY_PATH value without the given entries (undefined when nothing is left). */
function without(value: string | undefined, drop: Set<string>): string | undefined {
  const kept = splitLdLibraryPath(value).filter((e) => e === '' || !drop.has(e));
  return kept.length === 0 ? undefined : kept.join(':');
}

function describeProblem(p: Problem): string {
  const what = p.kind === 'undefined-symbol' || p.kind === 'unversioned-undefined-symbol'
    ? `undefined symbol ${p.symbol}${p.version ? `, version ${p.version}` : ''}${p.library ? ` (${p.library})` : ''}`
    : p.kind === 'version-not-found' ? `version ${p.version} not found in ${p.library}`
      : p.kind === 'loader-abort' || p.kind === 'cpu-isa-level' || p.kind === 'executable-stack' || p.kind === 'static-tls' || p.kind === 'noexec-mount' ? p.summary
    // A not-found with a picked file: the loader stops at a file it cannot load (empty, cut off, not ELF).
      : p.chosen ? `${p.library}: the loader stops at ${p.chosen}` : `${p.library} not found`;
  return `${p.object}: ${what}`;
}

/** Problems grouped by object and picked file, in order (a problem without a picked file stands alone). */
function groupProblems(problems: Problem[]): Problem[][] {
  const groups = new Map<string, Problem[]>();
  problems.forEach((p, i) => {
    const key = p.chosen ? `${p.object}\0${p.chosen}` : `${i}`;
    groups.set(key, [...(groups.get(key) ?? []), p]);
  });
  return [...groups.values()];
}

function describeGroup(g: Problem[]): string {
  const versions = [...new Set(g.filter((p) => p.kind === 'version-not-found').map((p) => p.version!))];
  const symbols = [...new Set(g.filter((p) => p.symbol).map((p) => p.symbol!))];
  const parts = [
    ...(versions.length > 0 ? [`version${versions.length === 1 ? '' : 's'} ${versions.join(', ')} not found`] : []),
    ...(symbols.length > 0 ? [`${symbols.length} undefined symbol${symbols.length === 1 ? '' : 's'} (${symbols.slice(0, 4).join(', ')}${symbols.length > 4 ? `, ... ${symbols.length - 4} more` : ''})`] : []),
  ];
  return `${g[0]!.object}: ${parts.join(' and ')}${g[0]!.library ? ` in ${g[0]!.library}` : ''}`;
}

/**
 * Which CUDA entries of LD_LIBRARY_PATH change how the active Python environment's pip CUDA
 * libraries load, decided by the check engine: the libraries are checked under the current
 * LD_LIBRARY_PATH and under the same value without its CUDA entries; a dependency bound
 * through an entry that would otherwise bind elsewhere is a shadow, and a problem that only
 * exists with the entries is theirs.
 */
export async function shadowingFindings(
  ctx: DoctorContext, entries: LdEntryFact[], pythonLibDirs: string[], check: CheckFn, program: string | null = null, systemTorch = false,
): Promise<ShadowingResult> {
  const findings: Finding[] = [];
  const reported: Reported = new Map();
  if (pythonLibDirs.length === 0) return {verdicts: [], baselineProblems: [], findings, reported};
  const ld = ctx.env.LD_LIBRARY_PATH;
  const drop = new Set(entries.map((e) => e.entry));
  // The loader's other variables as this environment has them (a preloaded library is bound first).
  // The same options as every check doctor runs: check's own, its verdict cache included.
  const options = {...engineOptions(ctx), targets: pythonLibDirs, ...(program ? {exe: program} : {})};
  const current = await check({...options, ldLibraryPath: ld});
  const base = drop.size === 0 ? current : await check({...options, ldLibraryPath: without(ld, drop)});
  const baseEdges = edgeMap(base);
  const baseKeys = new Set(base.problems.map(problemKey));
  // The driver's own problems (a stub, a mismatched libcuda) are the driver section's.
  const newProblems = current.problems.filter((p) => !baseKeys.has(problemKey(p)) && severityOf(p) !== null && !DRIVER_KINDS.has(p.kind));
  const pyDirs = pythonLibDirs.map(trimSlash);
  const pyDirsReal = pyDirs.map(real);

  // Where each library name was bound in the current view, to attribute problems to entries.
  const boundAt = new Map<string, string>();
  for (const o of current.objects) for (const e of o.needed) if (e.path && !boundAt.has(e.name)) boundAt.set(e.name, e.path);

  // Who loaded an object outside the Python directories, to name it by the wheel library it serves.
  const loadedBy = new Map<string, string>();
  for (const o of current.objects) for (const e of o.needed) if (e.path && e.via !== 'loaded' && !loadedBy.has(e.path)) loadedBy.set(e.path, o.path);
  const inPython = (path: string): boolean => isUnderAny(path, pyDirs) || isUnderAny(real(path), pyDirsReal);
  const objectName = (path: string): string => {
    if (inPython(path)) return shortName(path, pyDirs);
    let root = loadedBy.get(path);
    for (let hops = 0; root && !inPython(root) && hops < 32; hops++) root = loadedBy.get(root);
    return root ? `${path} (loaded for ${shortName(root, pyDirs)})` : path;
  };

  const verdicts: EntryVerdict[] = entries.map((entry) => {
    const dir = trimSlash(entry.entry);
    const dirReal = real(dir);
    const inEntry = (path: string | null | undefined): boolean => !!path && (trimSlash(dirname(path)) === dir || real(dirname(path)) === dirReal);
    const shadows: Shadow[] = [];
    const supplies: Shadow[] = [];
    // Every object the wheels' libraries load counts, not only those inside the Python directories:
    // torch/lib/libtorch.so -> a system library -> libcurand.so.10 is redirected all the same.
    for (const o of current.objects) {
      for (const e of o.needed) {
        if (e.via !== 'ld_library_path' || !inEntry(e.path)) continue;
        const key = `${o.path}\0${e.name}`;
        const instead = baseEdges.get(key) ?? null;
        // Without the entry the search finds nothing: the entry supplies the library, it shadows
        // nothing (dropping it, the fix a shadow gets, would break the load).
        if (baseEdges.has(key) && instead === null) {
          supplies.push({object: o.path, library: e.name, chosen: e.path!, instead: null});
          continue;
        }
        // The same file by another spelling ($ORIGIN/../.. or a link) is no shadow. Unknown without
        // the entry (that load stops before this edge, or never maps the object): a shadow, no "instead".
        if (instead === null || real(instead) !== real(e.path!)) shadows.push({object: o.path, library: e.name, chosen: e.path!, instead});
      }
    }
    const problems = newProblems.filter((p) => (p.chosen?.startsWith(`${dir}/`) ?? false) || inEntry(p.library ? boundAt.get(p.library) : undefined));
    return {entry: entry.entry, shadows, supplies, problems};
  });

  const attributed = new Set(verdicts.flatMap((v) => v.problems.map(problemKey)));
  for (const v of verdicts) {
    const entry = entries.find((e) => e.entry === v.entry)!;
    const fix = entryFix(ctx, entry, systemTorch);
    if (v.problems.length > 0) {
      const first = v.problems[0]!;
      const lacks = first.kind === 'undefined-symbol' && first.symbol
        ? `, which lacks ${first.symbol}${first.version ? `@${first.version}` : ''}`
        : first.kind === 'version-not-found' ? `, which lacks version ${first.version}` : '';
      const bound = first.library ? boundAt.get(first.library) : undefined;
      findings.push({
        id: 'env.ld-library-path-breaks-python',
        severity: worst(v.problems),
        title: `LD_LIBRARY_PATH entry ${v.entry} makes ${objectName(first.object)} bind ${bound ?? first.chosen ?? first.library}${lacks}`,
        evidence: [
          `LD_LIBRARY_PATH=${ld ?? ''} (entry ${entry.index + 1}${entry.toolkitVersion ? `, CUDA ${entry.toolkitVersion}` : ''})`,
          // The engine's explanation restates chosen/shadowed in prose: show it only when they are missing.
          // One entry per object and picked file: eight symbols a shadowing library lacks are one problem.
          ...groupProblems(v.problems).flatMap((g) => {
            const p = g[0]!;
            return [g.length === 1 ? describeProblem(p) : describeGroup(g), ...(p.chosen ? [`  loader picks: ${p.chosen}`] : []), ...(p.shadowed ? [`  shadowed: ${p.shadowed}`] : []),
              ...(p.chosen || p.shadowed ? [] : [`  ${p.explanation}`])];
          }),
        ],
        fix,
      });
    } else if (v.shadows.length > 0) {
      findings.push({
        id: 'env.ld-library-path-shadows-python',
        severity: 'warning',
        title: `LD_LIBRARY_PATH entry ${v.entry} shadows the Python environment's CUDA libraries: ${[...new Set(v.shadows.map((s) => s.library))].join(', ')} come from it instead`,
        evidence: v.shadows.slice(0, 6).map((s) => `${objectName(s.object)} needs ${s.library}: ${s.chosen}${s.instead ? ` instead of ${normalize(s.instead)}` : ''}`)
          .concat(v.shadows.length > 6 ? [`... and ${v.shadows.length - 6} more`] : []),
        fix,
      });
    }
  }
  const unattributed = newProblems.filter((p) => !attributed.has(problemKey(p)));
  if (unattributed.length > 0) {
    findings.push({
      id: 'env.ld-library-path-breaks-python',
      severity: worst(unattributed),
      title: `This LD_LIBRARY_PATH makes the Python environment's CUDA libraries fail to load`,
      evidence: [`LD_LIBRARY_PATH=${ld ?? ''}`, ...unattributed.slice(0, 6).flatMap((p) => [describeProblem(p), `  ${p.explanation}`])],
      fix: unattributed[0]!.fix ?? 'Remove the CUDA toolkit entries from LD_LIBRARY_PATH (cudaenv use VERSION --ld-library-path none)',
    });
  }
  for (const v of verdicts) {
    if (v.supplies.length === 0 || v.problems.length > 0) continue;
    findings.push({
      id: 'env.ld-library-path-supplies-python',
      severity: 'info',
      title: `LD_LIBRARY_PATH entry ${v.entry} provides ${[...new Set(v.supplies.map((s) => s.library))].join(', ')}, which the Python environment's CUDA libraries find nowhere else: keep it`,
      evidence: v.supplies.slice(0, 6).map((s) => `${objectName(s.object)} needs ${s.library}: ${s.chosen}; not found without this entry`)
        .concat(v.supplies.length > 6 ? [`... and ${v.supplies.length - 6} more`] : []),
      fix: null,
    });
  }
  // What fails now and would still fail without the entries (a problem only without them is one
  // the entries fix: reported above as what they provide, never as a failure of this environment).
  const currentKeys = new Set(current.problems.map(problemKey));
  // One rule with check: a driver library not found (libcuda.so.1 on a build host) is what check says it is.
  const baselineProblems = base.problems.filter((p) => currentKeys.has(problemKey(p)) && severityOf(p) !== null && !DRIVER_KINDS.has(p.kind));
  if (baselineProblems.length > 0) {
    findings.push({
      id: 'pytorch.libraries-broken',
      severity: worst(baselineProblems),
      title: `The Python environment's CUDA libraries fail to load even without LD_LIBRARY_PATH's CUDA entries`,
      evidence: baselineProblems.slice(0, 6).flatMap((p) => [describeProblem(p), `  ${p.explanation}`])
        .concat(baselineProblems.length > 6 ? [`... and ${baselineProblems.length - 6} more`] : [])
        .concat(program ? [`checked as ${program} loads them (cudaenv check --exe ${quoteSh(program)} ${pythonLibDirs.map(quoteSh).join(' ')})`] : []),
      fix: baselineProblems[0]!.fix ?? 'Reinstall the packages that own these libraries (pip install --force-reinstall ...)',
    });
  }
  for (const p of newProblems) reported.set(problemKey(p), {problem: p, finding: 'env.ld-library-path-breaks-python'});
  for (const p of baselineProblems) reported.set(problemKey(p), {problem: p, finding: 'pytorch.libraries-broken'});
  return {verdicts, baselineProblems, findings, current, reported};
}

/** torch/lib/libtorch_cuda.so, nvidia/cusparse/lib/libcusparse.so.12: short and unambiguous. */
function shortName(object: string, pyDirs: string[]): string {
  for (const d of pyDirs) {
    if (object.startsWith(`${d}/`)) {
      const sp = dirname(dirname(d)).endsWith('/nvidia') ? dirname(dirname(dirname(d))) : dirname(dirname(d));
      return relative(sp, object);
    }
  }
  return basename(object);
}

/** Drop the entry: for a cudaenv version through `cudaenv use --ld-library-path none`, else by hand. */
function entryFix(ctx: DoctorContext, entry: LdEntryFact, systemTorch: boolean): string {
  const rest = splitLdLibraryPath(ctx.env.LD_LIBRARY_PATH).filter((e) => e !== entry.entry && e !== '');
  const manual = rest.length > 0 ? `export LD_LIBRARY_PATH=${quoteSh(rest.join(':'))}` : 'unset LD_LIBRARY_PATH';
  const versions = trimSlash(ctx.paths.versions);
  if (entry.entry.startsWith(`${versions}/`)) {
    const label = entry.entry.slice(versions.length + 1).split('/')[0]!;
    return `cudaenv use ${label} --ld-library-path none (or make it the default: cudaenv config ldLibraryPath none); by hand: ${manual}`;
  }
  // A distribution's torch (Debian's) loads the system's CUDA packages, not wheels of its own.
  return `${manual} (drop ${entry.entry}; ${systemTorch ? 'torch loads the CUDA libraries of its distribution\'s packages' : 'pip wheels bring their own CUDA libraries'})`;
}
