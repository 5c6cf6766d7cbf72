import {readFileSync} from 'node:fs';
import {compareDotted, compareVersions, parseVersion} from './version.js';

/**
 * NVIDIA's releases and the version of each component in them (releases.json, generated from
 * the redistrib manifests by scripts/gen-release-table.mjs). A toolkit cudaenv did not install
 * says only its components' versions (nvcc 13.0.88, cudart 13.0.96); the release (13.0.2) is
 * the one whose components are exactly those.
 */
export type ReleaseTable = Record<string, Record<string, string>>;

let table: ReleaseTable | undefined;

/** Read on first use: the hot commands (current, shims) never need it. */
export function releaseTable(): ReleaseTable {
  table ??= (JSON.parse(readFileSync(new URL('./releases.json', import.meta.url), 'utf8')) as {releases: ReleaseTable}).releases;
  return table;
}

/** A component version found in a toolkit, and where. */
export interface FoundComponent {
  version: string;
  from: string;
}

export interface ReleaseMatch {
  /** The label cudaenv names the toolkit by. */
  label: string;
  /**
   * exact: one release ships every component version found; several: more than one does (the
   * newest is taken); partial: none does (the release that ships most of them is taken); none:
   * no release in the table ships any of them (a release newer than the table, or a rebuilt
   * component), and the label is the runtime's or nvcc's own version; newer: the runtime's
   * (or nvcc's) version is newer than in every release of the table (a release after it: the
   * table's rows, even where some libraries match, are not it), the label is that own version.
   */
  kind: 'exact' | 'several' | 'partial' | 'none' | 'newer';
  /** Releases that ship every component found (exact, several), or most of them (partial). */
  candidates: string[];
  components: Record<string, FoundComponent>;
  /** For each component: the releases that ship that very version. */
  matched: Record<string, string[]>;
}

function newestFirst(labels: string[]): string[] {
  return [...labels].sort((a, b) => compareVersions(parseVersion(b)!, parseVersion(a)!));
}

/** The oldest and newest release of a table, for saying which table cudaenv has. */
export function tableRange(releases: ReleaseTable = releaseTable()): {oldest: string; newest: string} {
  const labels = newestFirst(Object.keys(releases));
  return {oldest: labels.at(-1)!, newest: labels[0]!};
}

/** Whether a release label (MAJOR.MINOR.PATCH) is newer than every release of the table. */
export function newerThanTable(label: string, releases: ReleaseTable = releaseTable()): boolean {
  const v = parseVersion(label);
  return v !== undefined && compareVersions(v, parseVersion(tableRange(releases).newest)!) > 0;
}

/** Whether a component's version is newer than that component's in every release of the table that has it. */
function newerComponent(name: string, version: string, releases: ReleaseTable): boolean {
  const versions = Object.values(releases).map((r) => r[name]).filter((v): v is string => v !== undefined);
  return versions.length > 0 && versions.every((v) => compareDotted(version, v) > 0);
}

/** The table with more releases (the mirror's, kept in the store's cache); a release in both keeps the extra's row. */
export function mergeTables(base: ReleaseTable, extra: ReleaseTable): ReleaseTable {
  return {...base, ...extra};
}

/** `13.4` for a toolkit whose cudart (or nvcc) is 13.4.x: the release it belongs to starts so. */
export function runtimeMinor(components: Record<string, FoundComponent>): string | undefined {
  const v = (components.cuda_cudart ?? components.cuda_nvcc)?.version;
  const m = v === undefined ? null : /^(\d+\.\d+)\./.exec(v);
  return m?.[1];
}

/** Components that some release in the table has: others (cuDNN, unknown wheels) say nothing about the release. */
export function knownComponent(name: string, releases: ReleaseTable = releaseTable()): boolean {
  return Object.values(releases).some((r) => name in r);
}

/** Names the release a set of component versions belongs to. Undefined when there are no components. */
export function matchRelease(components: Record<string, FoundComponent>, releases: ReleaseTable = releaseTable()): ReleaseMatch | undefined {
  const names = Object.keys(components).filter((c) => knownComponent(c, releases)).sort();
  if (names.length === 0) return undefined;
  const used: Record<string, FoundComponent> = {};
  for (const n of names) used[n] = components[n]!;
  const matched: Record<string, string[]> = {};
  const score = new Map<string, number>();
  for (const n of names) {
    matched[n] = newestFirst(Object.keys(releases).filter((label) => releases[label]![n] === used[n]!.version));
    for (const label of matched[n]!) score.set(label, (score.get(label) ?? 0) + 1);
  }
  const best = Math.max(0, ...score.values());
  const candidates = newestFirst([...score.keys()].filter((l) => score.get(l) === best));
  if (best === names.length) {
    return {label: candidates[0]!, kind: candidates.length === 1 ? 'exact' : 'several', candidates, components: used, matched};
  }
  const runtime = used.cuda_cudart ?? used.cuda_nvcc;
  if (runtime && /^\d+\.\d+\.\d+$/.test(runtime.version) && newerComponent(runtime === used.cuda_cudart ? 'cuda_cudart' : 'cuda_nvcc', runtime.version, releases)) {
    return {label: runtime.version, kind: 'newer', candidates: [], components: used, matched};
  }
  if (best > 0) return {label: candidates[0]!, kind: 'partial', candidates, components: used, matched};
  // Newer than the table: the runtime's own version is the closest thing to a release label.
  const fallback = used.cuda_cudart ?? used.cuda_nvcc ?? used[names[0]!]!;
  const label = /^\d+\.\d+\.\d+$/.test(fallback.version) ? fallback.version : '';
  return {label, kind: 'none', candidates: [], components: used, matched};
}

/** One line for messages: "cuda_cudart 13.0.96, cuda_nvcc 13.0.88 (nvcc --version) and 8 more". */
export function describeComponents(m: ReleaseMatch, limit = 3): string {
  const parts = Object.entries(m.components).map(([n, c]) => `${n} ${c.version}`);
  const shown = parts.slice(0, limit).join(', ');
  return parts.length > limit ? `${shown} and ${parts.length - limit} more` : shown;
}

/** Why a toolkit's components name no single release, for a warning: "cuda_nvcc 12.2.140 is in 12.2.2; cuda_cudart 12.2.127 is in none". */
export function describeMismatch(m: ReleaseMatch): string {
  return Object.entries(m.matched)
    .map(([n, labels]) => `${n} ${m.components[n]!.version} is in ${labels.length === 0 ? 'no release' : labels.join(', ')}`)
    .join('; ');
}
