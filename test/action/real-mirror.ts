import {mkdirSync, readFileSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {buildArchive, sha256, writeIndex, type ComponentSpec} from '../helpers/mirror.js';

/** NVIDIA's verbatim manifests, kept in the repository (test/fixtures/redist-manifests). */
export const MANIFESTS = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'redist-manifests');

export interface Served {
  name: string;
  relativePath: string;
  size: number;
  sha256: string;
}

/**
 * Writes NVIDIA's real `redistrib_<label>.json` under `root` with stand-in archives for
 * `standIns`: each is put at the manifest's own relative_path, and only the sha256 and size
 * of the entries served are rewritten (as test/fixtures/redist-manifests/README.md asks). Every
 * other component stays as NVIDIA lists it; the mirror has no archive for it.
 */
export function writeRealRelease(root: string, kind: 'cuda' | 'cudnn', label: string, standIns: ComponentSpec[], work: string): Served[] {
  const data = JSON.parse(readFileSync(join(MANIFESTS, kind, `redistrib_${label}.json`), 'utf8')) as Record<string, Record<string, Record<string, unknown>>>;
  const served: Served[] = [];
  for (const c of standIns) {
    const platform = c.platform ?? 'linux-x86_64';
    const byPlatform = data[c.name]?.[platform];
    const entry = (c.variant ? byPlatform?.[c.variant] : byPlatform) as Record<string, unknown> | undefined;
    if (!entry) throw new Error(`${kind} ${label} has no ${c.name} for ${platform}${c.variant ? ` ${c.variant}` : ''}`);
    const bytes = buildArchive(work, c);
    const rel = entry.relative_path as string;
    mkdirSync(dirname(join(root, rel)), {recursive: true});
    writeFileSync(join(root, rel), bytes);
    entry.sha256 = sha256(bytes);
    entry.size = typeof entry.size === 'number' ? bytes.length : String(bytes.length);
    served.push({name: c.name, relativePath: rel, size: bytes.length, sha256: entry.sha256 as string});
  }
  mkdirSync(root, {recursive: true});
  writeFileSync(join(root, `redistrib_${label}.json`), JSON.stringify(data, null, 4));
  return served;
}

/** Copies real manifests unchanged (releases listed in the index but not installed by the test). */
export function copyRealManifests(root: string, kind: 'cuda' | 'cudnn', labels: string[]): void {
  mkdirSync(root, {recursive: true});
  for (const l of labels) writeFileSync(join(root, `redistrib_${l}.json`), readFileSync(join(MANIFESTS, kind, `redistrib_${l}.json`)));
}

export {writeIndex};
