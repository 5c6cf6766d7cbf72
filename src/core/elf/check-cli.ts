/**
 * What `cudaenv check` does once its targets are known: the check itself, the warning for paths
 * without a shared object, and the text output. Shared by the oclif command (src/commands/check.ts)
 * and the start-up fast path for `cudaenv check PATH...` without flags (src/fast-path.ts), so the
 * two cannot drift apart. Printing is left to the caller.
 */
import type {CheckReport} from './api.js';
import {formatProblems, formatSkipped, formatTree} from './format.js';
import {checkLibraries, firstProblemLine} from './index.js';

export interface CheckCliInput {
  targets: string[];
  /** LD_LIBRARY_PATH to assume (undefined: unset). */
  ldLibraryPath: string | undefined;
  exe?: string;
  recursive?: boolean;
  strict?: boolean;
  tree?: boolean;
  /** $CUDAENV_DIR/versions (fixes name the version an LD_LIBRARY_PATH entry belongs to). */
  storeVersionsDir: string;
  /** $CUDAENV_DIR/cache/check, the persistent verdict cache; undefined with --no-cache. */
  cacheDir?: string;
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

export async function runCheckCli(input: CheckCliInput): Promise<CheckCliResult> {
  const report = await checkLibraries({
    targets: input.targets,
    ldLibraryPath: input.ldLibraryPath,
    preload: input.env.LD_PRELOAD ? [input.env.LD_PRELOAD] : undefined,
    exe: input.exe,
    recursive: input.recursive,
    strict: input.strict,
    sysroot: input.env.CUDAENV_SYSROOT || undefined,
    storeVersionsDir: input.storeVersionsDir,
    cacheDir: input.cacheDir,
  });
  const warnings = report.checked.length === 0 ? [`no ELF shared objects in ${input.targets.join(', ')}`] : [];
  let text: string | null = null;
  if (!input.json) {
    const out: string[] = [];
    if (input.tree) out.push(...formatTree(report), '');
    out.push(...formatSkipped(report), ...formatProblems(report, {strict: input.strict}));
    out.push(firstProblemLine(report, {strict: input.strict}));
    text = out.join('\n');
  }
  return {report, exitCode: report.ok ? 0 : 1, warnings, text};
}
