/**
 * Text that comes from a mirror (a manifest's free-text `name`, `version`, `license`; a tar
 * entry's name; what tar or xz said about an archive) is shown with its control characters made
 * visible: C0 (ESC starts the terminal's escape sequences, CR overwrites a line, a newline starts
 * a forged line or, in a GitHub Actions log, a `::workflow-command::`), DEL, C1 (U+009B is a
 * one-character CSI on terminals that read 8-bit controls) and the bidirectional overrides and
 * isolates (text shown in another order than it is). Each becomes `\n`, `\t`, `\r`, `\xHH` or
 * `\u{HHHH}`; a backslash stays as it is (the escapes are for people to read, not to decode).
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = {'\n': '\\n', '\t': '\\t', '\r': '\\r'};

export function escapeControl(text: string): string {
  return text.replace(CONTROL, (ch) => {
    const named = NAMED[ch];
    if (named !== undefined) return named;
    const code = ch.codePointAt(0)!;
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
  });
}

