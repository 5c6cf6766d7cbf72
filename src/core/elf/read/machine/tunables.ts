/**
 * Each setting of one numeric tunable in a GLIBC_TUNABLES string ("glibc.rtld.dynamic_sort=1:
 * glibc.rtld.execstack=2"), in order, read as glibc reads a number (strtoul, base 0: decimal, 0x
 * hex, 0 octal, after blanks); null for a setting that is no number (glibc warns and ignores it).
 * Whether the loader knows the tunable, its range and which setting counts are the caller's.
 */
export function tunableSettings(tunables: string | undefined, name: string): Array<number | null> {
  const out: Array<number | null> = [];
  for (const item of (tunables ?? '').split(':')) {
    const eq = item.indexOf('=');
    if (eq < 0 || item.slice(0, eq) !== name) continue;
    const m = /^[ \t\n\v\f\r]*(?:0x([0-9a-f]+)|(0[0-7]*)|([1-9]\d*))$/i.exec(item.slice(eq + 1));
    out.push(!m ? null : m[1] !== undefined ? parseInt(m[1], 16) : m[2] !== undefined ? parseInt(m[2], 8) : Number(m[3]));
  }
  return out;
}

/**
 * The setting of a numeric tunable the loader goes by, or null for its default. Up to glibc 2.39
 * each valid setting is applied in turn (one out of range or no number is ignored), so the last
 * valid one stays; from 2.41 only the last setting is looked at, and if it is invalid the default
 * stays, whatever came before. Checked with Debian's 2.36 and 2.41 and Ubuntu's 2.39 and 2.43;
 * 2.40 is taken as 2.39 (no 2.40 loader was at hand). `glibc` null: the newest rules.
 */
export function tunableInEffect(tunables: string | undefined, name: string, valid: (n: number) => boolean, glibc: readonly [number, number] | null): number | null {
  const settings = tunableSettings(tunables, name);
  const lastOnly = glibc === null || glibc[0] > 2 || (glibc[0] === 2 && glibc[1] >= 41);
  for (const n of (lastOnly ? settings.slice(-1) : settings.reverse())) if (n !== null && valid(n)) return n;
  return null;
}
