import {redactCredentials} from './text/redact.js';

/**
 * Every failure a user can meet is a CudaenvError: what failed (with the path or value),
 * and what to do. Commands render it as one or two lines, never a stack trace.
 */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

export class CudaenvError extends Error {
  readonly hint?: string;
  readonly exitCode: number;
  readonly code: string;

  constructor(message: string, options: {hint?: string; exitCode?: number; code?: string; cause?: unknown} = {}) {
    // A URL's password never reaches the user's screen or logs (a mirror's URL is in many messages).
    super(redactCredentials(message), options.cause === undefined ? undefined : {cause: options.cause});
    this.name = 'CudaenvError';
    this.hint = options.hint === undefined ? undefined : redactCredentials(options.hint);
    this.exitCode = options.exitCode ?? EXIT_FAILED;
    this.code = options.code ?? 'failed';
  }
}

export class UsageError extends CudaenvError {
  constructor(message: string, hint?: string) {
    super(message, {hint, exitCode: EXIT_USAGE, code: 'usage'});
  }
}

// Not `instanceof Error`: errors from Node's core belong to another realm under Jest's VM modules.
export function isErrno(error: unknown, code?: string): error is NodeJS.ErrnoException {
  return typeof error === 'object' && error !== null && typeof (error as NodeJS.ErrnoException).code === 'string' &&
    (code === undefined || (error as NodeJS.ErrnoException).code === code);
}

/** The text a user sees for any error, CudaenvError or not. */
export function formatError(error: unknown): string {
  if (error instanceof CudaenvError) return error.hint ? `${error.message}\n${error.hint}` : error.message;
  if (error instanceof Error) return redactCredentials(error.message);
  return redactCredentials(String(error));
}
