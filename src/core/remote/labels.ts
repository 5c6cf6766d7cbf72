/**
 * Redist release labels: CUDA uses MAJOR.MINOR.PATCH (12.4.1), cuDNN may use more parts
 * (8.9.7.29). Compared numerically part by part; a missing part counts as 0.
 */
export function labelParts(label: string): number[] | undefined {
  if (!/^\d{1,4}(\.\d{1,6}){0,4}$/.test(label)) return undefined;
  return label.split('.').map(Number);
}

export function compareLabels(a: string, b: string): number {
  const x = labelParts(a) ?? [];
  const y = labelParts(b) ?? [];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Whether `label` lies under the numeric prefix `prefix` (`12.4` matches 12.4.0 and 12.4.1, not 12.40.0). */
export function matchesPrefix(label: string, prefix: string): boolean {
  const p = labelParts(prefix);
  const l = labelParts(label);
  if (!p || !l || p.length > l.length) return false;
  return p.every((n, i) => l[i] === n);
}

/** The newest label matching a prefix (undefined prefix or "latest": the newest of all). */
export function newestMatching(labels: readonly string[], prefix: string | undefined): string | undefined {
  const pool = prefix === undefined || prefix === 'latest' ? [...labels] : labels.filter((l) => matchesPrefix(l, prefix));
  return pool.sort(compareLabels).at(-1);
}
