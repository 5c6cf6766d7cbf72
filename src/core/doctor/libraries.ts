/**
 * What this environment loads, through the same check `cudaenv check` runs: the CUDA libraries
 * of each LD_LIBRARY_PATH entry and of LD_PRELOAD, the active toolkit, /usr/local/cuda (the
 * Python environment's CUDA libraries are checked by shadowing.ts, under the same options).
 * Every problem the check finds is reported with the check's own summary, cause and fix, and
 * with the check's severity: an error there is an error here, a warning a warning.
 */
import {existsSync, realpathSync, statSync} from 'node:fs';
import {basename, isAbsolute, join} from 'node:path';
import {isFailing, type CheckOptions, type CheckReport, type Problem} from '../elf/api.js';
import {loaderVariables} from '../elf/index.js';
import {quoteSh} from '../text/quote.js';
import {isCudaLibraryName} from './cuda-libs.js';
import type {LdEntryFact} from './env-vars.js';
import {sysPath} from './sysroot.js';
import type {ActiveToolkit, ToolkitState} from './toolkit.js';
import type {DoctorContext, Finding, Severity} from './types.js';

export type CheckFn = (options: CheckOptions) => Promise<CheckReport>;

/**
 * The options every check doctor runs shares with `cudaenv check` in this environment: its
 * LD_LIBRARY_PATH, LD_PRELOAD, GLIBC_TUNABLES and LD_BIND_NOW, the store (fixes name versions),
 * and check's verdict cache, so a second doctor on an unchanged machine reads verdicts instead of
 * libraries. Under CUDAENV_SYSROOT the image's ld.so.cache is used where the image has one; the
 * system directories, glibc release and CPU stay the host's (docs/doctor.md says so).
 */
export function engineOptions(ctx: DoctorContext): Omit<CheckOptions, 'targets'> {
  const cache = ctx.sysroot ? sysPath(ctx, '/etc/ld.so.cache') : undefined;
  return {
    ldLibraryPath: ctx.env.LD_LIBRARY_PATH || undefined,
    storeVersionsDir: ctx.paths.versions,
    cwd: ctx.cwd,
    cacheDir: ctx.paths.checkCache,
    ...(cache && existsSync(cache) ? {cacheFile: cache} : {}),
    ...loaderVariables(ctx.env),
  };
}

export function problemKey(p: Pick<Problem, 'kind' | 'object' | 'library' | 'version' | 'symbol'>): string {
  return [p.kind, p.object, p.library, p.version, p.symbol].join('\0');
}

/** One rule with `check`: what fails there is an error; a feature's loss a warning; unversioned references are check's notes, not problems. */
export function severityOf(p: Problem): Severity | null {
  if (p.kind === 'unversioned-undefined-symbol') return null;
  return isFailing(p, false) ? 'error' : 'warning';
}

/** Problems doctor reports elsewhere under their own ids (the driver section). */
export const DRIVER_KINDS: ReadonlySet<Problem['kind']> = new Set(['cuda-stub', 'driver-mismatch', 'driver-too-old']);

/** Each check problem doctor reports, by problemKey: the problem and the id of the finding that reports it. */
export type Reported = Map<string, {problem: Problem; finding: string}>;

export interface LibraryGroup {
  /** The finding's id when its libraries fail. */
  id: string;
  /** "LD_LIBRARY_PATH entry /x", "the active toolkit (CUDA 12.4.1) /x/lib64". */
  label: string;
  targets: string[];
}

export interface CheckedGroup {
  group: LibraryGroup;
  report: CheckReport;
  /** Files the check refused (not ELF, damaged, unreadable), with why. */
  refused: string[];
}

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** lib64 when the toolkit has it, else lib. */
function libDirOf(root: string): string | undefined {
  for (const d of ['lib64', 'lib']) if (isDir(join(root, d))) return join(root, d);
  return undefined;
}

/** The LD_PRELOAD entries (split on spaces and colons, as ld.so does) that name CUDA libraries. */
export function preloadedCudaLibraries(env: NodeJS.ProcessEnv): string[] {
  return (env.LD_PRELOAD ?? '').split(/[\s:]+/).filter((e) => e !== '' && isAbsolute(e) && isCudaLibraryName(basename(e)) && existsSync(e));
}

/**
 * The groups of libraries this environment brings, each checked apart (so a problem is told by
 * what brought it), in the order the issue names them; a directory already checked in an earlier
 * group is not checked again.
 */
export function libraryGroups(ctx: DoctorContext, entries: LdEntryFact[], toolkits: ToolkitState): LibraryGroup[] {
  const groups: LibraryGroup[] = [];
  const seenDirs = new Set<string>();
  for (const e of entries) {
    // Each file once, by the first of its names in sorted order (as `check DIR` lists it).
    const seen = new Set<string>();
    const files = e.cudaLibraries.map((n) => join(e.entry, n)).filter((f) => existsSync(f) && !seen.has(real(f)) && !!seen.add(real(f)));
    seenDirs.add(real(e.entry));
    if (files.length > 0) groups.push({id: 'env.ld-library-path-libraries-broken', label: `LD_LIBRARY_PATH entry ${e.entry}${e.toolkitVersion ? ` (CUDA ${e.toolkitVersion})` : ''}`, targets: files});
  }
  const preload = preloadedCudaLibraries(ctx.env);
  if (preload.length > 0) groups.push({id: 'env.ld-preload-libraries-broken', label: `LD_PRELOAD (${preload.join(' ')})`, targets: preload});
  const toolkit = (t: ActiveToolkit | (ToolkitState['usrLocalCuda']) | undefined, id: string, what: string): void => {
    if (!t?.real) return;
    const dir = libDirOf(t.real);
    if (!dir || seenDirs.has(real(dir))) return;
    seenDirs.add(real(dir));
    groups.push({id, label: `${what}${t.version ? ` (CUDA ${t.version})` : ''} ${dir}`, targets: [dir]});
  };
  toolkit(toolkits.active, 'toolkit.libraries-broken', 'the active toolkit');
  if (toolkits.usrLocalCuda.exists) toolkit(toolkits.usrLocalCuda, 'toolkit.usr-local-cuda-libraries-broken', '/usr/local/cuda');
  return groups;
}

/**
 * One group through the check. A file the check refuses as bad usage (a CUDA name on a file
 * that is not ELF, an empty or damaged file) is checked apart from the others and said.
 */
export async function checkGroup(ctx: DoctorContext, group: LibraryGroup, check: CheckFn): Promise<CheckedGroup> {
  const options = engineOptions(ctx);
  try {
    return {group, report: await check({...options, targets: group.targets}), refused: []};
  } catch (error) {
    if (group.targets.length === 1) {
      return {group, report: {ok: false, checked: [], objects: [], problems: [], skipped: []}, refused: [(error as Error).message]};
    }
  }
  const parts = await Promise.all(group.targets.map((t) => checkGroup(ctx, {...group, targets: [t]}, check)));
  const seen = new Set<string>();
  const problems = parts.flatMap((p) => p.report.problems).filter((p) => !seen.has(problemKey(p)) && seen.add(problemKey(p)));
  return {
    group,
    report: {ok: parts.every((p) => p.report.ok && p.refused.length === 0), checked: parts.flatMap((p) => p.report.checked), objects: parts.flatMap((p) => p.report.objects), problems, skipped: parts.flatMap((p) => p.report.skipped)},
    refused: parts.flatMap((p) => p.refused),
  };
}

/** A problem as `cudaenv check` prints it: its line, the file picked, why, and the fix. */
export function problemEvidence(p: Problem, withFix: boolean): string[] {
  return [
    `${severityOf(p) ?? 'note'}: ${p.summary}`,
    ...(p.chosen ? [`  picked: ${p.chosen}`] : []),
    ...(p.shadowed ? [`  shadowed: ${p.shadowed}`] : []),
    `  why: ${p.explanation}`,
    ...(withFix && p.fix ? [`  fix: ${p.fix}`] : []),
  ];
}

/** The `cudaenv check` command that shows the same, in this environment. */
function checkCommand(ctx: DoctorContext, targets: string[]): string {
  return `as \`cudaenv check ${targets.map(quoteSh).join(' ')}\` finds (LD_LIBRARY_PATH=${quoteSh(ctx.env.LD_LIBRARY_PATH ?? '')}${ctx.env.LD_PRELOAD ? ` LD_PRELOAD=${quoteSh(ctx.env.LD_PRELOAD)}` : ''})`;
}

/**
 * A finding for each group whose libraries fail, with every problem not already reported
 * (`reported`: keys of problems another finding names) in check's words; the driver's own
 * problems (a stub, a mismatched libcuda) are left to the driver section.
 */
export function groupFindings(ctx: DoctorContext, checked: CheckedGroup[], reported: Reported): Finding[] {
  const findings: Finding[] = [];
  for (const {group, report, refused} of checked) {
    const problems = report.problems.filter((p) => severityOf(p) !== null && !DRIVER_KINDS.has(p.kind) && !reported.has(problemKey(p)));
    for (const p of problems) reported.set(problemKey(p), {problem: p, finding: group.id});
    if (problems.length === 0 && refused.length === 0) continue;
    const errors = problems.filter((p) => severityOf(p) === 'error').length;
    const warnings = problems.length - errors;
    const first = problems.find((p) => severityOf(p) === 'error') ?? problems[0];
    // A file with a library's name that is no shared object: `check` of its directory skips it with a note, and so does this.
    const notes = refused.map((r) => `note: skipped: ${r}`);
    if (!first) {
      findings.push({id: group.id, severity: 'info', title: `${group.label}: ${refused.length} file${refused.length === 1 ? '' : 's'} named like CUDA libraries ${refused.length === 1 ? 'is' : 'are'} no shared object${refused.length === 1 ? '' : 's'}: ${refused[0]}`,
        evidence: notes, fix: null});
      continue;
    }
    const counts = [errors > 0 ? `${errors} error${errors === 1 ? '' : 's'}` : '', warnings > 0 ? `${warnings} warning${warnings === 1 ? '' : 's'}` : ''].filter(Boolean).join(', ');
    findings.push({
      id: group.id,
      severity: errors > 0 ? 'error' : 'warning',
      title: `${group.label}: ${counts} in the libraries it brings: ${first.summary}`,
      evidence: [...problems.flatMap((p) => problemEvidence(p, p !== first)), ...notes, checkCommand(ctx, group.targets)],
      fix: first.fix ?? `Run \`cudaenv check ${group.targets.map(quoteSh).join(' ')}\` for details`,
    });
  }
  return findings;
}
