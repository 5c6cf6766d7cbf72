import {UsageError} from '../errors.js';
import {compareVersions, parseLabel, parseVersion, type Version} from './version.js';

/**
 * What a user may write to choose a toolkit: `12`, `12.4`, `12.4.1`, `latest`, `system`
 * an alias name, or a suffixed store label (`12.4.1-local`, a second toolkit of a release, selected
 * by that exact name only). Parsing is strict because specs also come from untrusted files.
 */
export type Spec =
  | {kind: 'version'; text: string; major: number; minor?: number; patch?: number}
  | {kind: 'latest'; text: 'latest'}
  | {kind: 'system'; text: 'system'}
  | {kind: 'alias'; text: string; name: string}
  | {kind: 'label'; text: string; release: string; suffix: string};

const PARTIAL_RE = /^(0|[1-9]\d{0,3})(?:\.(0|[1-9]\d{0,3})(?:\.(0|[1-9]\d{0,5}))?)?$/;
export const ALIAS_RE = /^[A-Za-z][A-Za-z0-9_.-]{0,62}$/;
const RESERVED = new Set(['latest', 'system', 'default']);

export function tryParseSpec(text: string): Spec | undefined {
  if (text === 'latest') return {kind: 'latest', text};
  if (text === 'system') return {kind: 'system', text};
  const m = PARTIAL_RE.exec(text);
  if (m) {
    return {
      kind: 'version', text, major: Number(m[1]),
      minor: m[2] === undefined ? undefined : Number(m[2]),
      patch: m[3] === undefined ? undefined : Number(m[3]),
    };
  }
  const label = parseLabel(text);
  if (label?.suffix !== undefined) return {kind: 'label', text, release: label.release, suffix: label.suffix};
  if (ALIAS_RE.test(text) && !RESERVED.has(text)) return {kind: 'alias', text, name: text};
  return undefined;
}

/**
 * ` (write 12.4: no leading zeros)` for `12.04`, else ''. One grammar everywhere: the CLI and
 * .cuda-version refuse leading zeros alike (`12.04` would be 12.4 to some tools and 12.04 to
 * others), and both say how to write it.
 */
export function leadingZeroNote(text: string): string {
  if (!/^\d+(\.\d+){0,2}$/.test(text) || PARTIAL_RE.test(text)) return '';
  const fixed = text.split('.').map((n) => String(Number(n))).join('.');
  return PARTIAL_RE.test(fixed) ? ` (write ${fixed}: no leading zeros)` : '';
}

export function parseSpec(text: string, source = 'the spec'): Spec {
  const spec = tryParseSpec(text);
  if (!spec) {
    throw new UsageError(
      `${source} ${JSON.stringify(text)} is not a CUDA version spec${leadingZeroNote(text)}`,
      'Use a version such as 12, 12.4 or 12.4.1, or latest, system, or an alias name.',
    );
  }
  return spec;
}

/**
 * The version in `v12.4`, `cuda-12.4` or `CUDA12.4` (nvm's `v18`, the /usr/local/cuda-12.4
 * directory name): an alias name to the parser, most likely a version to the person who wrote it.
 */
const PREFIXED_RE = /^(?:v|cuda[-_]?)((?:0|[1-9]\d{0,3})(?:\.(?:0|[1-9]\d{0,3})(?:\.(?:0|[1-9]\d{0,5}))?)?)$/i;
export function prefixedVersion(text: string): string | undefined {
  return PREFIXED_RE.exec(text)?.[1];
}

/** The hint for such a spec where no alias of that name exists (undefined: it is no prefixed version). */
export function prefixedVersionHint(text: string): string | undefined {
  const bare = prefixedVersion(text);
  return bare === undefined ? undefined : `Write the version without its prefix: ${bare} (cudaenv reads ${text} as an alias name, and there is no such alias).`;
}

export function validateAliasName(name: string): void {
  if (!ALIAS_RE.test(name) || RESERVED.has(name) || PARTIAL_RE.test(name)) {
    throw new UsageError(
      `alias name ${JSON.stringify(name)} is not allowed`,
      'An alias name starts with a letter, uses letters, digits, ".", "_" or "-", and is not latest, system or default.',
    );
  }
}

/** Whether a version satisfies a numeric spec (`12` matches 12.x.y, `12.4` matches 12.4.y). */
export function matchesVersionSpec(spec: Extract<Spec, {kind: 'version'}>, v: Version): boolean {
  return v.major === spec.major &&
    (spec.minor === undefined || v.minor === spec.minor) &&
    (spec.patch === undefined || v.patch === spec.patch);
}

/**
 * The highest label among `labels` that matches a numeric or `latest` spec (releases only: a
 * suffixed label never matches them), or the exact label a `label` spec names.
 */
export function highestMatch(spec: Spec, labels: Iterable<string>): string | undefined {
  if (spec.kind === 'label') return [...labels].includes(spec.text) ? spec.text : undefined;
  let best: {label: string; v: Version} | undefined;
  for (const label of labels) {
    const v = parseVersion(label);
    if (!v) continue;
    if (spec.kind === 'version' && !matchesVersionSpec(spec, v)) continue;
    if (spec.kind !== 'version' && spec.kind !== 'latest') continue;
    if (!best || compareVersions(v, best.v) > 0) best = {label, v};
  }
  return best?.label;
}
