import {lstatSync} from 'node:fs';
import {CudaenvError, UsageError} from '../errors.js';
import {quoteSh} from '../text/quote.js';
import type {StorePaths} from '../store/paths.js';
import {installedLabels, readAlias} from '../store/registry.js';
import {detectToolkitVersion, scanSystemToolkits} from '../versions/detect.js';
import {releaseTable} from '../versions/releases.js';
import {highestMatch, parseSpec, prefixedVersion, prefixedVersionHint, type Spec} from '../versions/spec.js';

export interface Resolved {
  spec: Spec;
  /** The installed version label the spec selects; undefined for `system` or when nothing matches. */
  label?: string;
  /** Aliases followed on the way, in order. */
  aliases: string[];
  system: boolean;
  /** The alias name that does not exist, when following aliases stopped at one. */
  missingAlias?: string;
  /** The spec the aliases lead to (the spec itself when it is no alias). */
  target?: Spec;
}

const MAX_ALIAS_DEPTH = 8;

/** Resolves a spec against what the store holds: the highest installed version that matches. */
export function resolveSpec(paths: StorePaths, spec: Spec, labels: string[] = installedLabels(paths)): Resolved {
  const aliases: string[] = [];
  let current = spec;
  while (current.kind === 'alias') {
    if (aliases.includes(current.name) || aliases.length >= MAX_ALIAS_DEPTH) {
      throw new CudaenvError(`alias ${aliases[0]} loops (${[...aliases, current.name].join(' -> ')})`, {
        hint: `Point one of them at a version: cudaenv alias ${current.name} 12.4`,
      });
    }
    aliases.push(current.name);
    const target = readAlias(paths, current.name);
    if (target === undefined) {
      return {spec, aliases, system: false, missingAlias: current.name};
    }
    current = parseSpec(target, `alias ${current.name} holds`);
  }
  if (current.kind === 'system') return {spec, aliases, system: true, target: current};
  return {spec, label: highestMatch(current, labels), aliases, system: false, target: current};
}

/** The spec with aliases followed, for messages ("stable -> 12.4"). */
export function describeResolution(r: Resolved): string {
  return r.aliases.length > 0 ? `${r.aliases.join(' -> ')} -> ${r.label ?? '?'}` : (r.label ?? r.spec.text);
}

/** What to tell a user whose spec matches nothing installed. */
export function notInstalledError(r: Resolved, origin?: string): CudaenvError {
  const from = origin ? ` (${origin})` : '';
  if (r.missingAlias !== undefined) {
    return new CudaenvError(`no alias or version named ${r.missingAlias}${from}`, {hint: missingAliasHint(r.missingAlias), code: 'not-installed'});
  }
  if (r.target?.kind === 'label') {
    return new CudaenvError(`CUDA ${r.target.text} is not in the store${from}`, {
      hint: `${r.target.text} names a toolkit registered under that label: register it (cudaenv add DIR --as ${r.target.text}), or choose its release (${r.target.release}); \`cudaenv ls\` lists the store.`,
      code: 'not-installed',
    });
  }
  const wanted = r.target && r.target.text !== r.spec.text ? `${r.spec.text} (${[...r.aliases, r.target.text].join(' -> ')})` : r.spec.text;
  const install = `\`cudaenv install ${r.target?.text ?? (r.spec.kind === 'alias' ? 'VERSION' : r.spec.text)}\``;
  const here = r.target ? unregisteredToolkitFor(r.target) : undefined;
  // `use 99`: no release is 99, so `install 99` would fail too; say so instead of suggesting it.
  const labels = Object.keys(releaseTable());
  const noRelease = r.target?.kind === 'version' && highestMatch(r.target, labels) === undefined;
  const newest = highestMatch(parseSpec('latest'), labels);
  return new CudaenvError(`CUDA ${wanted} is not installed${from}`, {
    hint: here
      ? registerHint(here, install)
      : noRelease
        ? `No CUDA release ${r.target!.text} is known (cudaenv's release table ends at ${newest}): check the version; \`cudaenv ls-remote\` lists the releases the mirror offers, and \`cudaenv add PATH\` registers a toolkit you already have.`
        : `Install it with ${install}, or register an existing toolkit with \`cudaenv add PATH\`.`,
    code: 'not-installed',
  });
}

/** What to do about a toolkit the machine has but the store does not know: `install` is the other way, as a command. */
export function registerHint(here: {dir: string; version: string}, install: string): string {
  return `CUDA ${here.version} is on this machine at ${here.dir}, not registered: register it with \`cudaenv add ${quoteSh(here.dir)}\` (or install one with ${install}).`;
}

/**
 * The toolkit in the usual places (/usr/local/cuda-*, /opt/cuda*, /usr/lib/cuda; what `cudaenv ls
 * --system` lists) that `spec` would select were it registered: the highest matching version, at
 * a directory rather than a link to one. Inside `sysroot` (a system image) its places are looked
 * at, links are not followed (they would resolve on this host), and the path is the image's own.
 * Looked for only once a spec has failed.
 */
export function unregisteredToolkitFor(spec: Spec, image = ''): {dir: string; version: string} | undefined {
  if (spec.kind !== 'version' && spec.kind !== 'latest') return undefined;
  const sysroot = image.replace(/\/+$/, '');
  const byVersion = new Map<string, string>();
  const links: string[] = [];
  for (const dir of scanSystemToolkits([`${sysroot}/usr/local`, `${sysroot}/opt`], [`${sysroot}/usr/lib/cuda`])) {
    if (isLink(dir)) {
      links.push(dir);
      continue;
    }
    const version = detectToolkitVersion(dir, false).version;
    if (version !== undefined && !byVersion.has(version)) byVersion.set(version, dir.slice(sysroot.length));
  }
  // A link whose target lies elsewhere (/usr/local/cuda -> /srv/cuda-12.4), on this host only.
  for (const dir of sysroot === '' ? links : []) {
    const version = detectToolkitVersion(dir, false).version;
    if (version !== undefined && !byVersion.has(version)) byVersion.set(version, dir);
  }
  const version = highestMatch(spec, byVersion.keys());
  return version === undefined ? undefined : {dir: byVersion.get(version)!, version};
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** What to do about an alias that does not exist: `v12.4` is a version with a prefix, not a name to create. */
export function missingAliasHint(name: string): string {
  return prefixedVersionHint(name) ?? `List versions with \`cudaenv ls\`, or create the alias: cudaenv alias ${name} 12.4`;
}

/**
 * For commands that write a spec for later (local, global): `v12.4` where no alias of that
 * name exists is refused rather than written, since every later reading would fail.
 */
export function refusePrefixedVersion(r: Resolved, command: string): void {
  const bare = r.missingAlias !== undefined && r.aliases.length === 1 ? prefixedVersion(r.missingAlias) : undefined;
  if (bare !== undefined) {
    throw new UsageError(`"${r.missingAlias}" is not a version: cudaenv reads it as an alias name, and there is no such alias`,
      `Write the version without its prefix: cudaenv ${command} ${bare}`);
  }
}
