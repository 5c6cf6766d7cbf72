import {CudaenvError} from '../errors.js';
import {escapeControl} from '../text/control.js';
import {checkRelativePath} from './mirror.js';

/** One downloadable archive of a component for one platform (and, for cuDNN, one CUDA variant). */
export interface Artifact {
  relativePath: string;
  sha256: string;
  /** Bytes; NVIDIA writes it as a string. */
  size: number;
}

export interface Component {
  key: string;
  name: string;
  version: string;
  license?: string;
  /** platform -> artifact, or platform -> variant ("cuda12") -> artifact. */
  platforms: Map<string, Artifact | Map<string, Artifact>>;
}

export interface Manifest {
  label: string;
  /** sha256 of the manifest's bytes as fetched (set by catalog.ts's manifestFromText): what the GitHub Action keys its cache on. */
  sha256?: string;
  date?: string;
  product?: string;
  components: Map<string, Component>;
}

function broken(source: string, what: string): CudaenvError {
  return new CudaenvError(`${source} is not a valid redist manifest: ${what}`, {
    hint: 'The mirror serves a broken file; try again later or use another mirror (--mirror).', code: 'bad-manifest',
  });
}

/** ` ("Title: first words of the text")`: what the page says, short, one line, no markup. */
function pageWords(html: string): string {
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1];
  const body = html.replace(/<(script|style|title)[^>]*>[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]*>/g, ' ');
  const words = [title, body].filter((t): t is string => t !== undefined).map((t) => t.replace(/&[a-z#0-9]+;/gi, ' ').replace(/\s+/g, ' ').trim())
    .filter((t, i, all) => t !== '' && all.indexOf(t) === i).join(': ').replace(/[^\x20-\x7e\u00a0-\uffff]/g, '');
  return words === '' ? '' : ` ("${words.length > 100 ? `${words.slice(0, 100).trimEnd()}…` : words}")`;
}

function parseArtifact(value: unknown, where: string, source: string): Artifact {
  const o = value as Record<string, unknown>;
  if (typeof o.relative_path !== 'string') throw broken(source, `${where} has no relative_path`);
  if (typeof o.sha256 !== 'string' || !/^[0-9a-fA-F]{64}$/.test(o.sha256)) throw broken(source, `${where} has no valid sha256`);
  const sizeText = typeof o.size === 'number' ? String(o.size) : o.size;
  if (typeof sizeText !== 'string' || !/^\d{1,15}$/.test(sizeText)) throw broken(source, `${where} has no valid size`);
  return {relativePath: checkRelativePath(o.relative_path, where), sha256: o.sha256.toLowerCase(), size: Number(sizeText)};
}

/**
 * A manifest's free text (a component's name, version and license, the release's date and
 * product) goes to the terminal, error messages, receipts and the Action's log as it is parsed
 * here: its control characters escaped once, so no later reader can meet an escape sequence.
 */
function freeText(text: string): string {
  return escapeControl(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

const LABEL = /^\d{1,4}(\.\d{1,6}){1,4}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Parses NVIDIA's `redistrib_<label>.json` (`fileLabel`: the label its file name gives): string keys `release_*` at the top, every other
 * key a component whose platform keys hold `{relative_path, sha256, md5, size}` - or, in
 * cuDNN-style manifests (`cuda_variant`), a map `cuda12 -> {...}` per platform.
 */
export function parseManifest(text: string, source: string, fileLabel?: string): Manifest {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    // A captive portal, a proxy's login or error page, or a web site at the mirror's address
    // answers 200 with HTML: say that, with the page's own words, rather than a JSON parser's.
    if (/^\s*</.test(text)) {
      throw new CudaenvError(`${source} is not a redist manifest but an HTML page${pageWords(text)}`, {
        hint: 'A proxy, a network login page or a web site answered instead of the mirror: check --mirror (or CUDAENV_MIRROR, the mirror setting) and the network, then try again.',
        code: 'bad-manifest',
      });
    }
    // V8's message quotes the text around the fault: the mirror's bytes, shown escaped.
    throw broken(source, escapeControl((error as Error).message));
  }
  if (!isObject(data)) throw broken(source, 'the top level is not an object');
  // NVIDIA's manifests of CUDA 11.4.2 to 12.1.1 have only release_date: the label is then the
  // one in the file name (redistrib_<label>.json), which is how the release was asked for.
  const label = data.release_label === undefined ? fileLabel : data.release_label;
  if (typeof label !== 'string' || !LABEL.test(label)) {
    throw broken(source, data.release_label === undefined ? 'release_label is missing and the file name gives no release' : 'release_label is not a version');
  }
  const components = new Map<string, Component>();
  for (const [key, value] of Object.entries(data)) {
    if (key.startsWith('release_') || !isObject(value)) continue;
    // The name becomes a directory (tmp/stage-*/parts/<name>, licenses/<name>): "." or ".." would be another one.
    if (!/^[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}$/.test(key)) throw broken(source, `component name ${escapeControl(JSON.stringify(key))}`);
    const platforms = new Map<string, Artifact | Map<string, Artifact>>();
    for (const [platform, entry] of Object.entries(value)) {
      if (!isObject(entry) || platform.includes('variant')) continue;
      const where = `${key} ${platform}`;
      if ('relative_path' in entry || 'sha256' in entry) {
        platforms.set(platform, parseArtifact(entry, where, source));
        continue;
      }
      const variants = new Map<string, Artifact>();
      for (const [variant, sub] of Object.entries(entry)) {
        if (isObject(sub)) variants.set(variant, parseArtifact(sub, `${where} ${variant}`, source));
      }
      if (variants.size > 0) platforms.set(platform, variants);
    }
    components.set(key, {
      key,
      name: typeof value.name === 'string' ? freeText(value.name) : key,
      version: typeof value.version === 'string' ? freeText(value.version) : '',
      license: typeof value.license === 'string' ? freeText(value.license) : undefined,
      platforms,
    });
  }
  return {
    label,
    date: typeof data.release_date === 'string' ? freeText(data.release_date) : undefined,
    product: typeof data.release_product === 'string' ? freeText(data.release_product) : undefined,
    components,
  };
}

/** The artifact of a component for a platform (and CUDA variant, for cuDNN); undefined where there is none. */
export function artifactFor(component: Component, platform: string, variant?: string): Artifact | undefined {
  const entry = component.platforms.get(platform);
  if (!entry) return undefined;
  if (entry instanceof Map) return variant === undefined ? undefined : entry.get(variant);
  return entry;
}
