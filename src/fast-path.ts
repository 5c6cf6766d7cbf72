/**
 * Start-up fast path for the commands a shell and its user run most: `--version` and
 * `current`. They answer from a few small files without loading oclif. Anything else,
 * including any unexpected flag, returns false and goes through oclif as usual.
 */
import {readFileSync} from 'node:fs';
import {arch, platform} from 'node:os';
import {formatError, CudaenvError} from './core/errors.js';
import {storePaths} from './core/store/paths.js';
import {currentHint, currentReport, formatCurrent} from './core/versions/current.js';

export async function fastPath(argv: string[]): Promise<boolean> {
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {version: string};
    process.stdout.write(`cudaenv/${pkg.version} ${platform()}-${arch()} node-${process.version}\n`);
    return true;
  }
  if (argv[0] === 'current' && (argv.length === 1 || (argv.length === 2 && argv[1] === '--json'))) {
    runCurrent(argv[1] === '--json');
    return true;
  }
  return false;
}

export function runCurrent(json: boolean): void {
  try {
    const report = currentReport(storePaths());
    for (const w of report.warnings) process.stderr.write(`cudaenv: warning: ${w}\n`);
    if (json) {
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    } else if (report.installed) {
      process.stdout.write(`${formatCurrent(report)}\n`);
    } else {
      process.stderr.write(`cudaenv: ${formatCurrent(report)}\n${currentHint(report)}\n`);
    }
    process.exitCode = report.installed ? 0 : 1;
  } catch (error) {
    if (json) {
      const e = error instanceof CudaenvError ? error : undefined;
      process.stdout.write(`${JSON.stringify({ok: false, error: {code: e?.code ?? 'failed', message: (error as Error).message, hint: e?.hint ?? null}}, null, 2)}\n`);
    } else {
      process.stderr.write(`cudaenv: ${formatError(error)}\n`);
    }
    process.exitCode = error instanceof CudaenvError ? error.exitCode : 1;
  }
}
