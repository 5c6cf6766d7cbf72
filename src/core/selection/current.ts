import type {StorePaths} from '../store/paths.js';
import {describeVersion} from '../store/registry.js';
import {describeOrigin, selectVersion, type Origin, type Selection} from './select.js';
import {registerHint, unregisteredToolkitFor} from './resolve.js';
import {prefixedVersionHint, tryParseSpec} from '../versions/spec.js';

/** What `cudaenv current` reports, shared by the oclif command and the start-up fast path. */
export interface CurrentReport {
  version: string | null;
  spec: string;
  origin: Origin;
  originText: string;
  path: string | null;
  installed: boolean;
  system: boolean;
  aliases: string[];
  /** The store the version comes from: the user's, or a site store (issue 45); null when none is selected. */
  store: string | null;
  /** The alias name following stopped at because it does not exist (absent when none). */
  missingAlias?: string;
  warnings: string[];
}

export function currentReport(paths: StorePaths, options: {cwd?: string; env?: NodeJS.ProcessEnv} = {}): CurrentReport {
  const sel: Selection = selectVersion(paths, options);
  return {
    version: sel.system ? 'system' : (sel.label ?? null),
    spec: sel.spec.text,
    origin: sel.origin,
    originText: describeOrigin(sel.origin),
    path: sel.path ?? null,
    installed: sel.system || sel.label !== undefined,
    system: sel.system,
    aliases: sel.aliases,
    store: sel.label ? (describeVersion(paths, sel.label)?.store ?? paths.root) : null,
    ...(sel.missingAlias !== undefined ? {missingAlias: sel.missingAlias} : {}),
    warnings: sel.warnings,
  };
}

/** `showVersion` styles the version (colour at a terminal). */
export function formatCurrent(r: CurrentReport, showVersion: (version: string) => string = (v) => v): string {
  if (!r.installed) return `${r.spec} (${r.originText}) is not installed`;
  const via = r.aliases.length > 0 ? `, alias ${r.aliases.join(' -> ')}` : '';
  const site = r.store !== null && r.path !== null && !r.path.startsWith(`${r.store}/`) ? `, from the site store ${r.store}` : '';
  return `${showVersion(r.version ?? '')} (${r.originText}${via}${site})`;
}

export function currentHint(r: CurrentReport): string | undefined {
  if (r.installed) return undefined;
  if (r.spec === r.aliases[0]) {
    return (r.missingAlias === r.spec ? prefixedVersionHint(r.spec) : undefined) ?? `Create the alias (cudaenv alias ${r.spec} 12.4) or install what it names.`;
  }
  // The machine may have it already, unregistered (as notInstalledError says for use, exec, link).
  const spec = tryParseSpec(r.spec);
  if (spec?.kind === 'label') {
    return `${spec.text} names a toolkit registered under that label: register it (cudaenv add DIR --as ${spec.text}), or choose another version with \`cudaenv use\` (\`cudaenv ls\` lists the store).`;
  }
  const here = spec ? unregisteredToolkitFor(spec) : undefined;
  return here
    ? registerHint(here, `\`cudaenv install ${r.spec}\``)
    : `Install it with \`cudaenv install ${r.spec}\`, or choose another version with \`cudaenv use\`.`;
}
