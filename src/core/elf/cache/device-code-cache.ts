import {readFileSync, statSync} from 'node:fs';
import {join} from 'node:path';
import type {DeviceCodeSummary} from '../report-types.js';
import {archName, readDeviceCode, type DeviceCode} from '../read/device-code/index.js';
import {identity} from './inputs.js';
import {codeStamp, SETTLE_MS} from './verdict-cache.js';
import {writeFileSafely} from '../../safe-fs/index.js';

/**
 * The GPU code of each file (issue 33), read once per file identity (device, inode, size, mode,
 * modification and change times) and kept in `$CUDAENV_DIR/cache/check/device-code/`, beside
 * the verdicts: a 1 GB libtorch_cuda.so is walked once (its entry headers, ~0.5 s), then
 * answered from here while it reads the same. Unlike a verdict it depends on nothing but the file
 * and the reader's code, so one table serves every LD_LIBRARY_PATH and option set.
 */
const FORMAT = 3;
const MAX_FILES = 20_000;

interface Stored {
  /** The identity the summary was read at. */
  id: string;
  s: DeviceCodeSummary;
}

interface CacheFile {
  format: number;
  code: string;
  files: Record<string, Stored>;
}

/** A file's device code reduced to its modules (fat binaries) by what they hold. */
export function summariseDeviceCode(code: DeviceCode): DeviceCodeSummary {
  const byModule = new Map<number, string[]>();
  let relocatable = 0;
  // Per module: holds kernels (an image read to have one), none (every image read to have none:
  // nothing to launch, so nothing that can fail), or not judged (why, from the first image that could not be read).
  const withKernels = new Set<number>();
  const read = new Map<number, {none: boolean; why?: string}>();
  for (const i of code.images) {
    if (i.relocatable) continue;
    if (i.kernels === true) withKernels.add(i.fatbin);
    const m = read.get(i.fatbin) ?? {none: true};
    if (i.kernels !== false) m.none = false;
    if (i.notJudged && !m.why) m.why = i.notJudged;
    read.set(i.fatbin, m);
  }
  const notJudged = new Map<number, string>();
  for (const [fatbin, m] of read) if (!withKernels.has(fatbin) && !m.none) notJudged.set(fatbin, m.why ?? 'its images were not read');
  const empty = new Set<number>();
  for (const image of code.images) {
    if (image.relocatable) {
      relocatable++;
      continue;
    }
    if (read.get(image.fatbin)?.none) {
      empty.add(image.fatbin);
      continue;
    }
    const name = image.kind === 'ptx' ? `${archName(image)}@${image.version}` : archName(image);
    const list = byModule.get(image.fatbin) ?? [];
    if (!list.includes(name)) list.push(name);
    byModule.set(image.fatbin, list);
  }
  const counts = new Map<string, {images: string[]; count: number; notJudged?: string}>();
  for (const [fatbin, images] of byModule) {
    const why = notJudged.get(fatbin);
    const key = `${images.join(' ')}\0${why ?? ''}`;
    const entry = counts.get(key) ?? {images, count: 0, ...(why ? {notJudged: why} : {})};
    entry.count++;
    counts.set(key, entry);
  }
  // Fat binaries with no image at all are still modules (an empty container): counted alike.
  const none = code.fatbins - byModule.size - empty.size;
  if (none > 0) counts.set('', {images: [], count: none});
  return {modules: [...counts.values()], relocatable, ...(empty.size > 0 ? {withoutKernels: empty.size} : {}), ...(code.problem ? {problem: code.problem} : {})};
}

export class DeviceCodeCache {
  private readonly file: string | null;
  private readonly startedAt = Date.now();
  private loaded: Record<string, Stored> = {};
  private readonly fresh = new Map<string, Stored>();

  /** `dir`: $CUDAENV_DIR/cache/check (the verdict cache's), or undefined for no persistent cache. */
  constructor(dir: string | undefined) {
    this.file = dir ? join(dir, 'device-code', 'device-code.json') : null;
    if (!this.file) return;
    try {
      const data = JSON.parse(readFileSync(this.file, 'utf8')) as CacheFile;
      if (data?.format === FORMAT && data.code === stampHash() && data.files && typeof data.files === 'object') this.loaded = data.files;
    } catch {
      // none yet, or damaged: read afresh
    }
  }

  /**
   * The device code of `path`, or null for a file that is not an ELF object (or cannot be read:
   * the loader model says why elsewhere). Never throws.
   */
  get(path: string): DeviceCodeSummary | null {
    let id: string;
    let newest: number;
    try {
      const st = statSync(path);
      if (!st.isFile()) return null;
      id = identity(st);
      newest = Math.max(st.mtimeMs, st.ctimeMs);
    } catch {
      return null;
    }
    const known = this.fresh.get(path) ?? (Object.hasOwn(this.loaded, path) ? this.loaded[path] : undefined);
    if (known && known.id === id && Array.isArray(known.s?.modules)) return known.s;
    let summary: DeviceCodeSummary;
    try {
      summary = summariseDeviceCode(readDeviceCode(path));
    } catch {
      return null;
    }
    // A file changed within the timestamp tick could change again under the same identity.
    if (newest < this.startedAt - SETTLE_MS) this.fresh.set(path, {id, s: summary});
    return summary;
  }

  /** Writes what this run read (atomically); a store that cannot be written only means no cache. */
  save(): void {
    if (!this.file || this.fresh.size === 0) return;
    const files: Record<string, Stored> = {};
    let n = 0;
    for (const [path, stored] of this.fresh) {
      files[path] = stored;
      n++;
    }
    for (const [path, stored] of Object.entries(this.loaded)) {
      if (n >= MAX_FILES) break;
      if (Object.hasOwn(files, path)) continue;
      files[path] = stored;
      n++;
    }
    try {
      writeFileSafely(this.file, JSON.stringify({format: FORMAT, code: stampHash(), files} satisfies CacheFile), {durable: false});
    } catch {
      // read-only or full: the next check reads the files again
    }
  }
}

let hash: string | undefined;
function stampHash(): string {
  hash ??= process.getBuiltinModule('node:crypto').createHash('sha256').update(codeStamp()).digest('hex').slice(0, 32);
  return hash;
}
