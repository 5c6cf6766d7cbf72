/**
 * One numeric tunable from a GLIBC_TUNABLES string ("glibc.rtld.dynamic_sort=1:glibc.rtld.execstack=2"):
 * the last setting that parses as a number (decimal or 0x hex, as glibc's tunables_strtoul reads),
 * or null when none does. Whether the loader knows the tunable, and its range, is the caller's.
 */
export function tunableValue(tunables: string | undefined, name: string): number | null {
  if (!tunables) return null;
  let value: number | null = null;
  for (const item of tunables.split(':')) {
    const eq = item.indexOf('=');
    if (eq < 0 || item.slice(0, eq) !== name) continue;
    const text = item.slice(eq + 1);
    if (/^(?:0x[0-9a-f]+|\d+)$/i.test(text)) value = Number(text);
  }
  return value;
}
