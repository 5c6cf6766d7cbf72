/**
 * Colour for a person at a terminal: errors red, warnings yellow, the active version green.
 * None when the stream is not a TTY, when NO_COLOR is set to anything (no-color.org), or for
 * TERM=dumb. FORCE_COLOR is not honoured: test runners (jest's workers) set it for their own
 * output, and a child cudaenv would then colour what scripts parse.
 */
export function colorEnabled(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true && env.TERM !== 'dumb';
}

const CODES = {red: [31, 39], yellow: [33, 39], green: [32, 39], bold: [1, 22]} as const;

export type Style = keyof typeof CODES;

export function paint(text: string, style: Style, enabled: boolean): string {
  if (!enabled || text === '') return text;
  const [open, close] = CODES[style];
  return `\u001B[${open}m${text}\u001B[${close}m`;
}

/** `cudaenv: warning: MESSAGE` for stderr, `warning:` in yellow at a terminal. */
export function warningLine(message: string, stream: NodeJS.WriteStream = process.stderr): string {
  return warningText(message, colorEnabled(stream));
}

/** warningLine with the colour decided by the caller (src/cli/stdout.ts writeWarning, which builds no stream). */
export function warningText(message: string, color: boolean): string {
  return `cudaenv: ${paint('warning:', 'yellow', color)} ${message}\n`;
}

/** `cudaenv: ERROR` and the lines after it (the hint, plain), the error in red at a terminal. */
export function errorLines(text: string, stream: NodeJS.WriteStream = process.stderr): string {
  const [first, ...rest] = text.split('\n');
  return `cudaenv: ${[paint(first!, 'red', colorEnabled(stream)), ...rest].join('\n')}\n`;
}
