import {Command, Errors} from '@oclif/core';
import {CudaenvError, EXIT_FAILED, EXIT_USAGE, formatError} from '../core/errors.js';
import {withErrnoHint} from './errno-hint.js';
import {type StorePaths} from '../core/store/paths.js';
import {layeredStorePaths} from '../core/shell/site-sync.js';
import {errorLines, warningLine} from './color.js';
import {redactCredentials} from '../core/text/redact.js';

/**
 * Shared behaviour of every command: `--json` (oclif prints what `run` returns),
 * the store location, and errors rendered as one clear message with the right exit status.
 */
export abstract class CudaenvCommand extends Command {
  static override enableJsonFlag = true;

  private cachedPaths?: StorePaths;

  protected get paths(): StorePaths {
    // The site stores beneath the user's (issue 45) are brought up to date once per command.
    this.cachedPaths ??= layeredStorePaths((m) => this.warn2(m));
    return this.cachedPaths;
  }

  /**
   * oclif reads a missing argument from a piped stdin: `cudaenv global` (show) inside a script
   * would set the global default from the script's input, and eat that input. Arguments come
   * from the command line only.
   */
  override async init(): Promise<void> {
    for (const arg of Object.values((this.constructor as typeof Command).args ?? {})) (arg as {ignoreStdin?: boolean}).ignoreStdin = true;
    await super.init();
  }

  /** A warning on stderr (kept out of --json output on stdout). */
  protected warn2(message: string): void {
    process.stderr.write(warningLine(message));
  }

  protected override async catch(error: Error & {exitCode?: number}): Promise<unknown> {
    if (error instanceof Errors.ExitError) throw error;
    error = withErrnoHint(error);
    let exitCode = EXIT_FAILED;
    let code = 'failed';
    let hint: string | undefined;
    if (error instanceof CudaenvError) {
      exitCode = error.exitCode;
      code = error.code;
      hint = error.hint;
    } else if (error instanceof Errors.CLIError || (error as {oclif?: unknown}).oclif) {
      // oclif's own parse errors (unknown flag, missing argument) are usage errors.
      exitCode = EXIT_USAGE;
      code = 'usage';
    } else if (!(error instanceof Error)) {
      throw error;
    }
    if (this.jsonEnabled()) {
      process.stdout.write(`${JSON.stringify({ok: false, error: {code, message: redactCredentials(error.message), hint: hint ?? null}}, null, 2)}\n`);
    } else {
      // The error in red, the hint (what to do) plain.
      process.stderr.write(errorLines(formatError(error)));
      if (process.env.CUDAENV_DEBUG && error.stack) process.stderr.write(`${error.stack}\n`);
    }
    process.exitCode = exitCode;
    return undefined;
  }
}
