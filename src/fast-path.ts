/**
 * Start-up fast path for the commands a shell and its user run most: `--version` and
 * `current`. They answer from a few small files without loading oclif. `check PATH...` without
 * flags skips oclif too (its run is measured against `ldd -r`), and so do `use` and
 * `switch-check LABEL`, which the shell hook runs at a switch, and `init SHELL`. Anything else, including any
 * unexpected flag, returns false and goes through oclif as usual.
 */
import {readFileSync} from 'node:fs';
import {arch, platform} from 'node:os';
// Static: a dynamic import() of a built-in from the CommonJS bundle starts the ES module loader (15 ms).
import {format} from 'node:util';
import {errorLines, paint, warningLine} from './cli/color.js';
import {stdoutColorEnabled, writeStdout, writeWarning} from './cli/stdout.js';
import {withErrnoHint} from './cli/errno-hint.js';
import {formatError, CudaenvError, EXIT_FAILED} from './core/errors.js';
import {storePaths, type StorePaths} from './core/store/paths.js';
import {sitesInPlay} from './core/store/site.js';
import {SHELL_NAMES} from './core/shell/shell.js';
import {currentHint, currentReport, formatCurrent} from './core/selection/current.js';

/**
 * storePaths() with the site stores beneath it brought up to date (issue 45): the mirror's code
 * (site-sync, rehash, the shims' writer) is loaded only where a site is configured or mirrored.
 */
async function layeredPaths(warn: (message: string) => void): Promise<StorePaths> {
  const paths = storePaths();
  if (!sitesInPlay(paths)) return paths;
  return (await import('./core/shell/site-sync.js')).layeredStorePaths(warn);
}

export async function fastPath(argv: string[]): Promise<boolean> {
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {version: string};
    writeStdout(`cudaenv/${pkg.version} ${platform()}-${arch()} node-${process.version}\n`);
    return true;
  }
  if (argv[0] === 'current' && (argv.length === 1 || (argv.length === 2 && argv[1] === '--json'))) {
    await runCurrent(argv[1] === '--json');
    return true;
  }
  // `check PATH...` with no flag but --no-cache: nothing else for oclif to parse (every other
  // argument is a path, as oclif would take it), and loading oclif is a sixth of checking a whole
  // library directory. Anything else starting with '-' (flags, --help, --json, --) goes through oclif.
  // `--gpu VALUE` too (issue 33): a cached `check --gpu` is otherwise mostly oclif's start.
  // `check` without PATH (the active toolkit and Python environment) and `--exe PROGRAM` too (issue 42):
  // the import model `check A B --exe python3` was mostly oclif's start.
  if (argv[0] === 'check') {
    const gpus = checkGpuArgs(argv.slice(1));
    const afterGpu = gpus ? gpus.rest : argv.slice(1);
    const exe = checkExeArg(afterGpu);
    const rest = exe ? exe.rest : afterGpu;
    const paths = rest.filter((a) => a !== '--no-cache');
    if (exe !== null && paths.every((a) => !a.startsWith('-'))) {
      await runPlainCheck(paths, paths.length === rest.length, gpus?.values, exe?.value);
      return true;
    }
  }
  if (argv[0] === 'use') {
    const req = parseUseArgs(argv.slice(1));
    if (!req) return false;
    await runUseFast(req);
    return true;
  }
  // The rc line's fallback, and every new shell of those who eval it: `init bash|zsh|fish`.
  if (argv[0] === 'init' && argv.length === 2 && (SHELL_NAMES as readonly string[]).includes(argv[1]!)) {
    await runInit(argv[1]!);
    return true;
  }
  // What the shell hook runs after a switch whose check is not cached (a `cd` into a project):
  // oclif's start would be most of its cost. Only the hook's own form; --json and the rest go through oclif.
  if (argv[0] === 'switch-check' && argv.length === 2 && !argv[1]!.startsWith('-')) {
    await runSwitchCheck(argv[1]!);
    return true;
  }
  return false;
}

/** `cudaenv init SHELL`, as src/commands/init.ts runs it, errors rendered as src/cli/base.ts does. */
async function runInit(name: string): Promise<void> {
  try {
    writeStdout(await (await import('./cli/hook-commands.js')).initCode(name));
  } catch (caught) {
    renderError(caught);
  }
}

/** An error as src/cli/base.ts writes it without --json: the message in red, the hint plain; its exit status. */
function renderError(caught: unknown): void {
  const error = caught instanceof Error ? withErrnoHint(caught) : caught;
  process.stderr.write(errorLines(formatError(error)));
  if (process.env.CUDAENV_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  process.exitCode = error instanceof CudaenvError ? error.exitCode : EXIT_FAILED;
}

/** `cudaenv switch-check LABEL`, as src/commands/switch-check.ts runs it, errors rendered as src/cli/base.ts does. */
async function runSwitchCheck(label: string): Promise<void> {
  try {
    process.stderr.write(`${(await (await import('./cli/hook-commands.js')).switchCheckFor(label)).line}\n`);
  } catch (caught) {
    renderError(caught);
  }
}

/**
 * `use [SPEC] [--ld-library-path prepend|none] [-q|--quiet] [--json]`, as oclif would parse it;
 * anything else (--help, an unknown flag, a second argument) returns undefined and goes
 * through oclif, which explains it.
 */
export function parseUseArgs(args: string[]): {spec?: string; policy?: 'prepend' | 'none'; quiet: boolean; json: boolean} | undefined {
  const out: {spec?: string; policy?: 'prepend' | 'none'; quiet: boolean; json: boolean} = {quiet: false, json: false};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--json') out.json = true;
    else if (a === '-q' || a === '--quiet') out.quiet = true;
    else if (a === '--ld-library-path' || a.startsWith('--ld-library-path=')) {
      const value = a.includes('=') ? a.slice(a.indexOf('=') + 1) : args[++i];
      if ((value !== 'prepend' && value !== 'none') || out.policy !== undefined) return undefined;
      out.policy = value;
    } else if (!a.startsWith('-') && out.spec === undefined) out.spec = a;
    else return undefined;
  }
  return out;
}

async function runUseFast(req: {spec?: string; policy?: 'prepend' | 'none'; quiet: boolean; json: boolean}): Promise<void> {
  try {
    const {runUse} = await import('./core/shell/use.js');
    const out = await runUse({...req, paths: await layeredPaths((m) => process.stderr.write(warningLine(m))), env: process.env}, (m) => process.stderr.write(warningLine(m)));
    writeStdout(out.stdout);
  } catch (caught) {
    // As src/cli/base.ts renders errors: JSON on stdout with --json, else one message on stderr.
    const error = caught instanceof Error ? withErrnoHint(caught) : caught;
    if (req.json) writeStdout(jsonError(error));
    else process.stderr.write(errorLines(formatError(error)));
    process.exitCode = error instanceof CudaenvError ? error.exitCode : EXIT_FAILED;
  }
}

/**
 * The `--gpu VALUE` and `--gpu=VALUE` of `check`'s arguments, and the others; undefined when a
 * --gpu has no value (oclif explains that).
 */
export function checkGpuArgs(args: string[]): {values: string[]; rest: string[]} | undefined {
  const values: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith('--gpu=')) values.push(a.slice(6));
    else if (a === '--gpu') {
      const v = args[++i];
      if (v === undefined || v.startsWith('-')) return undefined;
      values.push(v);
    } else rest.push(a);
  }
  return values.length > 0 ? {values, rest} : undefined;
}

/**
 * The one `--exe PROGRAM` (or `--exe=PROGRAM`) of `check`'s arguments and the others; undefined
 * without one, null when its value is missing or it is given twice (oclif explains that).
 */
export function checkExeArg(args: string[]): {value: string; rest: string[]} | undefined | null {
  let value: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    let v: string | undefined;
    if (a.startsWith('--exe=')) v = a.slice(6);
    else if (a === '--exe') {
      v = args[++i];
      if (v === undefined || v.startsWith('-')) return null;
    } else {
      rest.push(a);
      continue;
    }
    if (value !== undefined || v === '') return null;
    value = v;
  }
  return value === undefined ? undefined : {value, rest};
}

/** `cudaenv check [PATH...] [--gpu VALUE...] [--exe PROGRAM]`, as src/commands/check.ts runs it without other flags, errors rendered as src/cli/base.ts does. */
export async function runPlainCheck(paths: string[], cache = true, gpus?: string[], exe?: string): Promise<void> {
  try {
    const [{runCheckText}, {chooseCheckTargets}] = await Promise.all([import('./core/elf/api.js'), import('./cli/check-targets.js')]);
    const store = await layeredPaths(writeWarning);
    const choice = await chooseCheckTargets(store, {paths, exe, cache});
    for (const w of choice.warnings) writeWarning(w);
    const result = await runCheckText({
      targets: choice.targets, python: choice.python, ldLibraryPath: choice.ldLibraryPath, exe: choice.exe, heading: choice.heading,
      storeVersionsDir: store.versions, json: false, env: process.env,
      cacheDir: cache ? store.checkCache : undefined, gpus,
    });
    if (result.exitCode !== 0) process.exitCode = result.exitCode;
    for (const w of result.warnings) writeWarning(w);
    // oclif's this.log: console.log of util.format(text), written without building process.stdout
    // (a pipe's net.Socket); a closed stdout (`| head`) is not an error, as oclif's Command has it.
    writeStdout(`${format(result.text)}\n`);
  } catch (error) {
    renderError(error);
  }
}

export async function runCurrent(json: boolean): Promise<void> {
  try {
    const report = currentReport(await layeredPaths((m) => process.stderr.write(warningLine(m))));
    for (const w of report.warnings) process.stderr.write(warningLine(w));
    if (json) {
      writeStdout(`${JSON.stringify(report, null, 2)}\n`);
    } else if (report.installed) {
      // The active version in green at a terminal, as `ls` shows it.
      writeStdout(`${formatCurrent(report, (v) => paint(v, 'green', stdoutColorEnabled()))}\n`);
    } else {
      process.stderr.write(errorLines(`${formatCurrent(report)}\n${currentHint(report)}`));
    }
    process.exitCode = report.installed ? 0 : 1;
  } catch (caught) {
    const error = caught instanceof Error ? withErrnoHint(caught) : caught;
    if (json) {
      writeStdout(jsonError(error));
    } else {
      process.stderr.write(errorLines(formatError(error)));
    }
    process.exitCode = error instanceof CudaenvError ? error.exitCode : 1;
  }
}

/** An error as src/cli/base.ts writes it under --json. */
function jsonError(error: unknown): string {
  const e = error instanceof CudaenvError ? error : undefined;
  return `${JSON.stringify({ok: false, error: {code: e?.code ?? 'failed', message: (error as Error).message, hint: e?.hint ?? null}}, null, 2)}\n`;
}
