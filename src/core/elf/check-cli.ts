/**
 * What `cudaenv check` does once its targets are known: the check itself, the warning for paths
 * without a shared object, and the text output. Shared by the oclif command (src/commands/check.ts)
 * and the start-up fast path for `cudaenv check PATH...` without flags (src/fast-path.ts), so the
 * two cannot drift apart. Printing is left to the caller.
 */
import {resolve} from 'node:path';
import {UsageError} from '../errors.js';
import type {CheckOptions, CheckReport} from './report-types.js';
import {formatProblems, formatSkipped, formatTree} from './explain/format-report.js';
import {checkWithWheels, firstProblemLine, type WheelsReportMaking} from './check.js';
import {formatGpu} from './explain/format-gpu.js';
import {makeContext, platformAnswer, verdictKey} from './check-files.js';
import {ReportFacts, ReportMemo, type MemoAnswer} from './cache/report-memo.js';
import {inodeKey} from './cache/inputs.js';
import {listTargets, type ListedFile} from './search/list-targets.js';
import {normalRoot, withLinkAnswers} from './read/machine/sysroot.js';

export interface CheckCliInput {
  targets: string[];
  /** LD_LIBRARY_PATH to assume (undefined: unset). */
  ldLibraryPath: string | undefined;
  exe?: string;
  recursive?: boolean;
  strict?: boolean;
  tree?: boolean;
  /** --no-runtime-loads: only what ld.so loads at start, as `ldd -r`. */
  runtimeLoads?: boolean;
  /** --gpu values (8.6, sm_120; `auto`: this machine's GPUs): whether each library carries code they run (issue 33). */
  gpus?: string[];
  /** $CUDAENV_DIR/versions (fixes name the version an LD_LIBRARY_PATH entry belongs to). */
  storeVersionsDir: string;
  /** $CUDAENV_DIR/cache/check, the persistent verdict cache; undefined with --no-cache. */
  cacheDir?: string;
  /** --page-size, parsed (parsePageSize). */
  pageSize?: number;
  /**
   * The active Python environment's CUDA libraries, when `check` runs without PATH: checked as
   * `exe` (its interpreter) dlopens them unless --exe names another program; `targets` as `ldd` loads them.
   */
  python?: {targets: string[]; exe?: string};
  /** The first line of the text: what was checked, when the command chose it (no PATH given). */
  heading?: string;
  /** With --json the report is the output: no text is made. */
  json: boolean;
  env: NodeJS.ProcessEnv;
}

export interface CheckCliResult {
  report: CheckReport;
  /** 1 when something would fail to load. */
  exitCode: 0 | 1;
  /** For stderr, each without the "cudaenv: warning: " prefix. */
  warnings: string[];
  /** For stdout (null with --json). */
  text: string | null;
}

export function runCheckCli(input: CheckCliInput): Promise<CheckCliResult> {
  return checkAndRender(input, cliOptions(input));
}

/**
 * runCheckCli for a text only (`cudaenv check PATH...`): a plain check's text is kept with every
 * fact it rests on (./cache/report-memo.ts) and given again while they all read the same.
 */
export function runCheckText(input: CheckCliInput): Promise<MemoAnswer> {
  // The listing and the kept facts resolve the same image paths (CUDAENV_SYSROOT): once each.
  return withLinkAnswers(async () => {
    const options = cliOptions(input);
    const memo = !input.json && !input.tree && !input.gpus?.length && input.cacheDir !== undefined ? openMemo(input, options) : null;
    const kept = memo?.memo.answer();
    if (kept) return kept;
    const making = memo?.making();
    const result = await checkAndRender(input, options, making);
    const answer: MemoAnswer = {text: result.text ?? '', exitCode: result.exitCode, warnings: result.warnings};
    if (memo) memo.memo.keep(making!.facts, answer);
    return answer;
  });
}

type CliOptions = Omit<CheckOptions, 'targets'>;

function cliOptions(input: CheckCliInput): CliOptions {
  return {
    ldLibraryPath: input.ldLibraryPath,
    preload: input.env.LD_PRELOAD ? [input.env.LD_PRELOAD] : undefined,
    recursive: input.recursive,
    strict: input.strict,
    runtimeLoads: input.runtimeLoads,
    // A relative root is the working directory's, as doctor takes it: image paths are joined to it, and must not be read relative to each other.
    sysroot: input.env.CUDAENV_SYSROOT ? resolve(input.env.CUDAENV_SYSROOT) : undefined,
    pageSize: input.pageSize,
    storeVersionsDir: input.storeVersionsDir,
    cacheDir: input.cacheDir,
  };
}

async function checkAndRender(input: CheckCliInput, options: CliOptions, making?: WheelsReportMaking): Promise<CheckCliResult> {
  const checked = await checkWithWheels({...options, targets: input.targets, exe: input.exe}, input.python ?? {targets: []}, making);
  const report = input.json ? withEdgeKinds(checked) : checked;
  const all = [...input.targets, ...(input.python?.targets ?? [])];
  const warnings = report.checked.length === 0 ? [`no ELF shared objects in ${all.join(', ')}`] : [];
  // The device-code readers only where GPU code is asked about (--gpu, --tree).
  const gpu = input.gpus?.length || (input.tree && !input.json) ? await import('./gpu/check-gpu.js') : null;
  if (input.gpus?.length) gpu!.checkGpuCode(report, input.gpus, input.cacheDir, warnings);
  let text: string | null = null;
  if (!input.json) {
    const out: string[] = input.heading ? [input.heading] : [];
    if (input.tree) out.push(...formatTree(report, gpu!.gpuCodeForTree(report, input.cacheDir)), '');
    out.push(...formatSkipped(report), ...formatProblems(report, {strict: input.strict}));
    if (report.gpu) out.push(...formatGpu(report.gpu));
    out.push(gpu?.gpuSummaryLine(report) ?? firstProblemLine(report, {strict: input.strict}));
    text = out.join('\n');
  }
  return {report, exitCode: report.ok ? 0 : 1, warnings, text};
}

/**
 * The kept report of this request: its key is the request (what the text shows, as given) and
 * the listing of its targets (each file by its identity; a change inside one is a fact), and
 * the verdict cache's own key; the listing is handed on to the check on a miss.
 */
function openMemo(input: CheckCliInput, options: CliOptions): {memo: ReportMemo; making: () => WheelsReportMaking} {
  const cwd = process.cwd();
  const sysroot = normalRoot(options.sysroot);
  const checkOptions = {...options, targets: input.targets, exe: input.exe};
  let listing: {listed: ListedFile[]; wheels: ListedFile[]} | undefined;
  const list = () => {
    const of = (targets: string[]) => listTargets(targets, {recursive: options.recursive, cwd, sysroot: options.sysroot});
    listing ??= {listed: of(input.targets), wheels: input.python?.targets.length ? of(input.python.targets) : []};
    return listing;
  };
  const shown = (files: ListedFile[]) => files.map((f) => [f.path, f.explicit, f.file ?? null, f.stat ? inodeKey(f.stat) : null]);
  let platform: ((key: string) => string) | undefined;
  const memo = new ReportMemo({
    dir: options.cacheDir!,
    request: {targets: input.targets, python: input.python ?? null, exe: input.exe ?? null, heading: input.heading ?? null, strict: input.strict ?? false, sysroot},
    key: () => ({listed: shown(list().listed), wheels: shown(list().wheels), verdict: verdictKey(checkOptions, cwd)}),
    sysroot,
    cwd,
    // The loader context only where a kept report holds a platform to compare.
    platform: (key) => (platform ??= platformAnswer(makeContext(checkOptions, cwd)))(key),
  });
  return {memo, making: () => ({facts: new ReportFacts(sysroot), ...list()})};
}

/**
 * `--page-size`: bytes or a size with k/K (4k, 16k, 64k): a power of two from 4 KB to 1 MB, the
 * page sizes Linux kernels use (4 KB on x86-64; 4, 16 or 64 KB on aarch64).
 */
export function parsePageSize(text: string): number {
  const m = /^(\d+)([kK])?$/.exec(text.trim());
  const n = m ? Number(m[1]) * (m[2] ? 1024 : 1) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 4096 || n > 1 << 20 || (n & (n - 1)) !== 0) {
    throw new UsageError(`--page-size ${text}: not a page size`, 'Give the kernel\'s page size in bytes or with k: 4k (x86-64), or 4k, 16k or 64k on aarch64 (`getconf PAGESIZE` on that machine).');
  }
  return n;
}

/**
 * `--json` names every edge's kind: 'needed' for what ld.so loads at start (DT_NEEDED, filters,
 * preloads), 'dlopen' for what a library loads at run time; so do the problems.
 */
function withEdgeKinds(report: CheckReport): CheckReport {
  // Issue 42: an edge and the problem on it carry the same impact. Every problem has one in --json:
  // what fails at start fails the library ('library'); a dlopen's says what is lost.
  const problems = report.problems.map((p) => ({...p, edge: p.edge ?? 'needed', impact: p.impact ?? ('library' as const)}));
  const impactOf = (object: string, library: string): 'library' | 'feature' | undefined =>
    problems.find((p) => p.object === object && p.library === library && p.kind !== 'unversioned-undefined-symbol')?.impact;
  return {
    ...report,
    objects: report.objects.map((o) => ({...o, needed: o.needed.map((e) => {
      const impact = impactOf(o.path, e.name) ?? (e.dlopen ? (e.dlopen.impact === 'library' ? 'library' : 'feature') : 'library');
      return {...e, edge: e.dlopen ? 'dlopen' : 'needed', impact, ...(e.dlopen ? {dlopen: {...e.dlopen, impact: e.dlopen.impact === 'optional' ? e.dlopen.impact : impact}} : {})};
    })})),
    problems,
  };
}
