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

/**
 * A store label: a release (12.4.1) or a release with a suffix (12.4.1-local), the name `cudaenv
 * add DIR --as` gives a second toolkit of a release the store already holds. A suffixed label is
 * selected only by its exact name, never by 12, 12.4, 12.4.1 or latest (issue 44).
 */
const LABEL_RE = /^((?:0|[1-9]\d{0,3})\.(?:0|[1-9]\d{0,3})\.(?:0|[1-9]\d{0,5}))(?:-([a-z][a-z0-9]{0,15}))?$/;

export function isLabel(text: string): boolean {
  return LABEL_RE.test(text);
}

/** The release and suffix of a store label (suffix undefined for a plain release), or undefined. */
export function parseLabel(text: string): {release: string; suffix?: string} | undefined {
  const m = LABEL_RE.exec(text);
  return m ? {release: m[1]!, suffix: m[2]} : undefined;
}

export function formatVersion(v: Version): string {
  return `${v.major}.${v.minor}.${v.patch}`;
}

export function compareVersions(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/**
 * Sorts version labels oldest first; a suffixed label (12.4.1-local) right after its release;
 * labels that do not parse sort before all others.
 */
export function sortVersionLabels(labels: Iterable<string>): string[] {
  return [...labels].sort((x, y) => {
    const lx = parseLabel(x);
    const ly = parseLabel(y);
    const a = lx && parseVersion(lx.release);
    const b = ly && parseVersion(ly.release);
    if (!a || !b) return a ? 1 : b ? -1 : x.localeCompare(y);
    return compareVersions(a, b) || (lx!.suffix === undefined ? -1 : 0) - (ly!.suffix === undefined ? -1 : 0) || x.localeCompare(y);
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
