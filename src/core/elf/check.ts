/**
 * The whole check, stage after stage, for a list of targets (index.ts exports it):
 * search/check-targets lists what to check, check-files runs each file through search (which
 * file each DT_NEEDED binds), bind (what fails) and explain (why, and the fix), and this file
 * merges the per-file results into one report in the loader's order. See README.md beside
 * this file and docs/check.md.
 */
import {existsSync, type Stats} from 'node:fs';
import {statOrNull} from './cache/inputs.js';
import {realpathIn, withLinkAnswers} from './read/machine/sysroot.js';
import {isFailing, type CheckedObject, type CheckOptions, type CheckReport, type Problem} from './report-types.js';
import {checkFiles, type FileResult} from './check-files.js';
import {growYoungGenerationFast} from '../heap-flags.js';
import {listTargets, type ListedFile} from './search/list-targets.js';
import type {ReportFacts} from './cache/report-memo.js';
import {hostLoaderPath} from './read/machine/platform.js';
import {prefetchHostLoaderFacts} from './read/ldcache/host-loader.js';

/**
 * The loader's stages, in the order a real run meets them: mapping the dependencies, checking their
 * versions (_dl_check_map_versions, whose assertion is a version-stage abort), the x86 ISA level check, relocating (symbols,
 * check_match's assertion). Within a stage the problems keep the model's order, which is the loader's.
 */
function stageOf(p: Problem): number {
  if (p.kind === 'not-found' || p.kind === 'noexec-mount' || p.kind === 'executable-stack') return 0;
  if (p.kind === 'version-not-found' || (p.kind === 'loader-abort' && p.symbol === null)) return 1;
  if (p.kind === 'cpu-isa-level') return 2;
  return 3;
}

/**
 * For a report that is to be kept (./cache/report-memo.ts): the targets as listed for its key, and
 * what records every fact it rests on.
 */
export interface ReportMaking {
  listed: ListedFile[];
  facts: ReportFacts;
}

/** Models the loader for every target and reports what would fail, with explanations. */
export function checkLibraries(options: CheckOptions, making?: ReportMaking): Promise<CheckReport> {
  // Under a sysroot every fact's path is resolved in the image: the same directories each time.
  return withLinkAnswers(() => checkLibrariesNow(options, making));
}

async function checkLibrariesNow(options: CheckOptions, making?: ReportMaking): Promise<CheckReport> {
  const cwd = options.cwd ?? process.cwd();
  // Without a store every file is checked, and the host's loader asked first: asked now, it
  // answers while the targets are listed; and the heap is sized for a long check from the start
  // (checkFiles sets it otherwise, once the verdict cache has left files to read).
  if (!options.cacheDir) {
    const interp = hostLoaderPath();
    if (interp) prefetchHostLoaderFacts(interp);
    growYoungGenerationFast();
  }
  const listed = making?.listed ?? listTargets(options.targets, {recursive: options.recursive, cwd, sysroot: options.sysroot});
  // Bad usage (a file named explicitly that is not ELF, an --exe that is no program) fails in
  // checkFiles before any file is checked, once the verdict cache has answered what it can.
  // Per-file results merged in listing order (checkFiles could as well run on shares of the list:
  // worker threads were measured, and re-reading shared dependencies in each cost more than they saved).
  // The identities of the files the check stat'ed or the verdict cache found unchanged: the merge
  // keys objects by them without a stat each (a cached check of the PyTorch environment stat'ed
  // 96 files again, a first check of /usr/lib/x86_64-linux-gnu 731).
  const known = new Map<string, string>();
  const facts = making?.facts;
  const results: FileResult[] = await checkFiles({...options, cwd}, listed.map((f, index) => ({...f, index})), known, facts);
  const report = mergeResults(results.sort((a, b) => a.index - b.index), options.strict ?? false, options.sysroot, known, facts);
  if (options.sysroot) for (const o of report.objects) withImageFile(o, options.sysroot, facts);
  return report;
}

/** CheckedObject.file: what a path of the image that dangles on the host names in the image (a report prints paths to be used on the host). */
function withImageFile(o: CheckedObject, sysroot: string, facts?: ReportFacts): void {
  if (facts ? facts.stat(o.path) !== null : existsSync(o.path)) return;
  const file = facts ? facts.realpathIn(o.path) : realpathIn(sysroot, o.path);
  if (file && file !== o.path) o.file = file;
}

/**
 * One name per file, as ld.so keys objects (device and inode, _dl_file_id_match_p): under a merged
 * /usr a library named /usr/lib/... and reached as /lib/... through ld.so.cache is one object.
 * The first name met is kept; names are registered in the order given (the checked files first,
 * so that the name a person gave wins). A path that cannot be stat'ed is its own identity.
 */
export class FileNames {
  private readonly byName = new Map<string, string>();
  private readonly byId = new Map<string, string>();

  /**
   * `sysroot`: an image whose absolute links (/lib -> /usr/lib) lead nowhere on the host are followed in it.
   * `known`: (device, inode) of paths already stat'ed in this check, as stat(2) follows links.
   * `facts`: when the report is to be kept, what records each question asked here.
   */
  constructor(private readonly sysroot?: string, private readonly known?: ReadonlyMap<string, string>, private readonly facts?: ReportFacts) {}

  canonical(path: string): string {
    let name = this.byName.get(path);
    if (name !== undefined) return name;
    let id: string | null = this.known?.get(path) ?? null;
    // In an image, `known` holds the files the check opened, by the host paths it resolved them to.
    if (id === null && this.sysroot && this.known) {
      const host = this.realpathIn(path);
      if (host !== undefined) id = this.known.get(host) ?? null;
    }
    if (id === null) {
      const st = this.stat(path) ?? (this.sysroot ? this.stat(this.realpathIn(path) ?? path) : null);
      // else a file gone since, or unreadable: by its name
      if (st) id = `${st.dev}:${st.ino}`;
    }
    name = id === null ? path : this.byId.get(id) ?? path;
    if (id !== null && !this.byId.has(id)) this.byId.set(id, path);
    this.byName.set(path, name);
    return name;
  }

  private stat(path: string): Stats | null {
    return this.facts ? this.facts.stat(path) : statOrNull(path);
  }

  private realpathIn(path: string): string | undefined {
    return this.facts ? this.facts.realpathIn(path) : realpathIn(this.sysroot!, path);
  }

  /** The object under its kept name, its edges leading to kept names. */
  object(o: CheckedObject): CheckedObject {
    const path = this.canonical(o.path);
    const needed = o.needed.map((e) => {
      const to = e.path === null ? null : this.canonical(e.path);
      return to === e.path ? e : {...e, path: to};
    });
    return path === o.path && needed.every((e, i) => e === o.needed[i]) ? o : {...o, path, needed};
  }

  problem(p: Problem): Problem {
    const object = this.canonical(p.object);
    return object === p.object ? p : {...p, object};
  }
}

/** One report from per-file results in listing order: objects and problems once each, the first occurrence kept. */
function mergeResults(results: FileResult[], strict: boolean, sysroot?: string, known?: ReadonlyMap<string, string>, facts?: ReportFacts): CheckReport {
  const names = new FileNames(sysroot, known, facts);
  for (const r of results) if (r.checked) names.canonical(r.checked);
  const checked: string[] = [];
  const skipped: CheckReport['skipped'] = [];
  const objects = new Map<string, CheckedObject>();
  const problems = new Map<string, Problem>();
  const failedPreloads = new Set<string>();
  // With --exe, what stops the program's start (a library it cannot map, a version, the ISA level,
  // a reference bound while it starts) comes before anything of its dlopen; a PLT slot of its own
  // that nothing binds fails only when called (Problem.when), so it comes after everything else.
  const order = new Map<Problem, number>();
  for (const r of results) {
    if (r.skipped) {
      skipped.push(r.skipped);
      continue;
    }
    if (r.checked && !checked.includes(names.canonical(r.checked))) checked.push(names.canonical(r.checked));
    for (const f of r.failedPreloads) failedPreloads.add(f);
    for (const o of r.objects) {
      const kept = names.object(o);
      if (!objects.has(kept.path)) objects.set(kept.path, kept);
    }
    const atStartup = new Set(r.objects.slice(0, r.startup ?? r.objects.length).map((o) => names.canonical(o.path)));
    for (const found of r.problems) {
      const problem = names.problem(found);
      const key = [problem.kind, problem.object, problem.library, problem.version, problem.symbol].join('\0');
      if (!problems.has(key)) problems.set(key, problem);
      const kept = problems.get(key)!;
      const stage = stageOf(problem);
      const rank = problem.when === 'first-call' ? 20 + stage
        : problem.when === 'start' || (atStartup.has(problem.object) && stage < 3) ? stage : 10 + stage;
      order.set(kept, Math.min(rank, order.get(kept) ?? Infinity));
    }
  }
  for (const f of failedPreloads) {
    const nul = f.indexOf('\0');
    const from = nul < 0 ? 'LD_PRELOAD' : f.slice(0, nul);
    skipped.push({path: f.slice(nul + 1), reason: `${from} entry cannot be preloaded: ignored (as ld.so does)`});
  }
  const list = [...problems.values()].sort((a, b) => order.get(a)! - order.get(b)!);
  return {ok: !list.some((p) => isFailing(p, strict)), checked, objects: [...objects.values()], problems: list, skipped};
}

/** ReportMaking for checkWithWheels: the wheels listed apart. */
export interface WheelsReportMaking extends ReportMaking {
  wheels: ListedFile[];
}

/**
 * Libraries any program may load, checked as `ldd -r` loads them (`options.targets`, as
 * `options.exe` loads them when it is given), and a Python environment's wheels, checked as its
 * interpreter dlopens them (`wheels.exe`, unless `options.exe` names the program): one report,
 * the former first. What `check` without PATH, the check after a switch and conda's preflight do.
 */
export async function checkWithWheels(options: CheckOptions, wheels: {targets: string[]; exe?: string}, making?: WheelsReportMaking): Promise<CheckReport> {
  const plainMaking = making && {facts: making.facts, listed: making.listed};
  if (wheels.targets.length === 0) return checkLibraries(options, plainMaking);
  const [plain, python] = await Promise.all([
    options.targets.length > 0 ? checkLibraries(options, plainMaking) : null,
    checkLibraries({...options, targets: wheels.targets, exe: options.exe ?? wheels.exe}, making && {facts: making.facts, listed: making.wheels}),
  ]);
  return plain ? combineReports([plain, python], options.sysroot, making?.facts) : python;
}

/** The loader's own variables as `env` has them: what a process started with `env` would load under. */
export function loaderVariables(env: NodeJS.ProcessEnv): Pick<CheckOptions, 'preload' | 'glibcTunables' | 'bindNow'> {
  return {preload: env.LD_PRELOAD ? [env.LD_PRELOAD] : undefined, glibcTunables: env.GLIBC_TUNABLES, bindNow: (env.LD_BIND_NOW ?? '') !== ''};
}

/**
 * One report from reports of separate checks (the toolkit's libraries as `ldd` loads them, the
 * wheels' as Python dlopens them), in the order given: objects and problems once each.
 */
function combineReports(reports: CheckReport[], sysroot?: string, facts?: ReportFacts): CheckReport {
  const objects = new Map<string, CheckedObject>();
  const problems = new Map<string, Problem>();
  const names = new FileNames(sysroot, undefined, facts);
  for (const r of reports) for (const c of r.checked) names.canonical(c);
  for (const r of reports) {
    for (const found of r.objects) {
      const o = names.object(found);
      if (!objects.has(o.path)) objects.set(o.path, o);
    }
    for (const found of r.problems) {
      const p = names.problem(found);
      const key = [p.kind, p.object, p.library, p.version, p.symbol].join('\0');
      if (!problems.has(key)) problems.set(key, p);
    }
  }
  return {
    ok: reports.every((r) => r.ok),
    checked: [...new Set(reports.flatMap((r) => r.checked.map((c) => names.canonical(c))))],
    objects: [...objects.values()],
    problems: [...problems.values()],
    skipped: reports.flatMap((r) => r.skipped),
  };
}

/**
 * One line for a prompt or a hook: "all N libraries resolve" ("no shared libraries to check" when N
 * is 0), or the first failing problem with its fix ("this LD_LIBRARY_PATH makes torch's
 * libcusparse.so.12 bind ..., which lacks ...; run `...`").
 */
export function firstProblemLine(report: CheckReport, options: {strict?: boolean} = {}): string {
  const strict = options.strict ?? false;
  // The worst finding: the first error (problems come in the order the process meets them), a
  // warning only when nothing fails without --strict (a report made with `strict` elsewhere).
  const first = report.problems.find((p) => isFailing(p, strict)) ?? (report.ok ? undefined : report.problems.find((p) => isFailing(p, true)));
  if (!first || (report.ok && !strict)) {
    const n = report.checked.length;
    const notes = report.problems.filter((p) => p.kind === 'unversioned-undefined-symbol').length;
    // "all 0 libraries resolve" would read as a pass of something that was never checked.
    if (n === 0) return 'no shared libraries to check';
    // A feature that will fail (a library loaded at run time) is worth the one line too.
    const feature = report.problems.find((p) => p.impact === 'feature');
    return `all ${n} ${n === 1 ? 'library resolves' : 'libraries resolve'}${notes > 0 ? ` (${notes} unversioned undefined symbol${notes === 1 ? '' : 's'} left to the loading program)` : ''}` +
      `${feature ? `; but ${feature.summary}` : ''}`;
  }
  return first.fix ? `${first.summary}; ${first.fix}` : first.summary;
}
