/**
 * Quoting for every shell cudaenv writes code for. All text a shell evaluates passes
 * through here; nothing else builds quoted strings. Each function returns one word that
 * the shell reads back as exactly `value`, expanding nothing.
 */

/** POSIX sh, bash, zsh, dash: single quotes; a quote becomes '\''. */
export function quoteSh(value: string): string {
  if (value !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** fish: inside single quotes only \\ and \' are escapes. */
export function quoteFish(value: string): string {
  if (value !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/**
 * csh/tcsh: single quotes stop everything but history (`!`) and newlines; both are
 * escaped with a backslash, and a quote closes, escapes and reopens.
 */
export function quoteCsh(value: string): string {
  if (value !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(value)) return value;
  return `'${value.replaceAll("'", `'\\''`).replaceAll('!', '\\!').replaceAll('\n', '\\\n')}'`;
}

/** A Lua string literal (Lmod modulefiles). */
export function quoteLua(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (code < 0x20 || code === 0x7f) out += `\\${String(code).padStart(3, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * A Tcl word (Environment Modules and Lmod's Tcl modulefiles): double quotes, in which `$`, `[`
 * and `\` substitute and `"` ends the word, so those (and `]`) are escaped with a backslash;
 * control characters become \uXXXX (four hex digits, the most \u reads: no digit after it is taken in).
 */
export function quoteTcl(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\' || ch === '$' || ch === '[' || ch === ']') out += `\\${ch}`;
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** A shell variable name we are willing to emit (never taken from untrusted input unchecked). */
export function assertVariableName(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`refusing to emit shell code for variable name ${JSON.stringify(name)}`);
  return name;
}
