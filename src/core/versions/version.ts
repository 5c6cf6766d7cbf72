/** A CUDA release label, MAJOR.MINOR.PATCH (for example 12.4.1). */
export interface Version {
  major: number;
  minor: number;
  patch: number;
}

const VERSION_RE = /^(0|[1-9]\d{0,3})\.(0|[1-9]\d{0,3})\.(0|[1-9]\d{0,5})$/;

export function parseVersion(text: string): Version | undefined {
  const m = VERSION_RE.exec(text);
  if (!m) return undefined;
  return {major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3])};
}

export function isVersion(text: string): boolean {
  return VERSION_RE.test(text);
}

export function formatVersion(v: Version): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

export function compareVersions(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** Sorts version labels oldest first; labels that do not parse sort before all others. */
export function sortVersionLabels(labels: Iterable<string>): string[] {
  return [...labels].sort((x, y) => {
    const a = parseVersion(x);
    const b = parseVersion(y);
    if (!a || !b) return a ? 1 : b ? -1 : x.localeCompare(y);
    return compareVersions(a, b);
  });
}

/** Compares dotted numbers part by part ("550.54.15" against "455.32", PTX ISA "8.4"); a missing part counts as 0. */
export function compareDotted(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
