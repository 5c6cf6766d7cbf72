import {readdirSync, readFileSync, statfsSync, statSync, unlinkSync} from 'node:fs';
import {basename, dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {isFailing, type CheckedObject, type FileVerdict} from '../report-types.js';
import {currentValue, factsIn, identity, inputKey, type InputKind, type InputSet} from './inputs.js';
import {linksHold, proveLinks, type LinkProof} from './link-proof.js';
import {writeFileSafely} from '../../safe-fs/index.js';

/**
 * A persistent cache of each checked file's result, in $CUDAENV_DIR/cache/check/, so that a
 * check of a tree that has not changed since the last one answers from what it recorded. A
 * result is reused only when every fact it depended on (./inputs.ts: each file's identity,
 * each searched directory's identity, each symlink a path crossed, the loader platform) still
 * reads the same: the same questions are asked again and compared, so a changed, added or
 * removed library, a replaced link, a new ld.so.cache or another CPU level each make the
 * affected files be checked again, and only those. What every file shares (the options, the
 * LD_LIBRARY_PATH, the code of this very build) selects the cache file.
 *
 * Never cached: results with a failing problem (their explanations look further afield), and
 * results resting on a file changed less than SETTLE_MS before the check began (a write within
 * the file system's timestamp tick could leave the identity unchanged: git's "racy" entries),
 * or on a network file system (NFS and its like may answer stat from a stale attribute cache).
 */
export const SETTLE_MS = 2000;
const FORMAT = 1;
/** Results kept per cache file; the cache files kept per directory (the least recently written go first). */
const MAX_ROOTS = 20_000;
const MAX_FILES = 16;

/** statfs f_type of file systems whose stat may be stale or whose timestamps come from another clock. */
const NETWORK_FS = new Set([
  0x6969, // NFS
  0xff534d42, // CIFS
  0xfe534d42, // SMB2
  0x517b, // SMB
  0x65735546, // FUSE (sshfs, s3fs, ...)
  0x01021997, // 9P (WSL2 /mnt, virtio shares)
  0x5346414f, // AFS
  0x6b414653, // kAFS
]);

/** One file's verdict as stored: its objects by index into the cache file's object table (o), `startup` as s. */
type FileEntry = Omit<FileVerdict, 'objects' | 'startup'> & {
  /** Indexes into the input table. */
  i: number[];
  /** 1: the file was named on its own (a program is then checked, not skipped as in a directory). */
  n?: 1;
  o: number[];
  s?: number;
};

interface CacheFile {
  format: number;
  key: string;
  inputs: Array<[InputKind, string, string]>;
  objects: CheckedObject[];
  files: Record<string, FileEntry>;
  /** What proves every 'h' input at once (./link-proof.ts); absent, each is asked. */
  links?: LinkProof;
}

export interface VerdictCacheOptions {
  /** $CUDAENV_DIR/cache/check */
  dir: string;
  /** Everything every result depends on besides the recorded facts (options, LD_LIBRARY_PATH, ...). */
  key: Record<string, unknown>;
  sysroot: string;
  /** The check's working directory (kind 'w'). */
  cwd: string;
  /** The loader platform for 'class:machine', as JSON (kind 'p'). */
  platform: (key: string) => string;
}

export class VerdictCache {
  private readonly file: string;
  private readonly keyText: string;
  private readonly startedAt = Date.now();
  private loaded: CacheFile | null = null;
  /** Per input index of the loaded file: does it still read the same (memoised for this run). */
  private readonly holds = new Map<number, boolean>();
  private readonly fresh = new Map<string, {inputs: InputSet; shared: InputSet; result: FileVerdict; named: boolean}>();
  private readonly stale = new Set<string>();
  /** The names this run answered from the file. */
  private readonly hits = new Set<string>();
  private readonly fsTypes = new Map<number, boolean>();
  /** Whether the loaded file's `links` directories all read the same (asked once per run). */
  private linkProofHolds: boolean | undefined;

  constructor(private readonly options: VerdictCacheOptions) {
    this.keyText = JSON.stringify({format: FORMAT, code: codeStamp(), ...options.key});
    this.file = join(options.dir, `${keyHash(this.keyText)}.json`);
    try {
      const data = JSON.parse(readFileSync(this.file, 'utf8')) as CacheFile;
      // Another key hashing alike, an older format or a damaged file: start afresh.
      if (data?.format === FORMAT && data.key === this.keyText && Array.isArray(data.inputs) && Array.isArray(data.objects) && data.files && typeof data.files === 'object') {
        this.loaded = data;
      }
    } catch {
      // no cache yet, or unreadable: every file is checked
    }
  }

  /**
   * The stored result for `name` when everything it depended on still holds, and it was stored
   * for a file named the same way (`named`: on its own, not found in a directory).
   */
  lookup(name: string, named = false): FileVerdict | undefined {
    const entry = this.loaded && Object.hasOwn(this.loaded.files, name) ? this.loaded.files[name] : undefined;
    // A file edited by hand or cut short in a way JSON still parses: a miss, never a crash.
    if (!entry || !Array.isArray(entry.i) || !Array.isArray(entry.o) || !Array.isArray(entry.problems) || !Array.isArray(entry.failedPreloads)) return undefined;
    // `cudaenv check bin/` skips a program that `cudaenv check bin/prog` checks: not the same answer.
    if ((entry.n === 1) !== named) return undefined;
    try {
      for (const i of entry.i) {
        if (!this.holdsNow(i)) {
          this.stale.add(name);
          return undefined;
        }
      }
      const objects = entry.o.map((i) => this.loaded!.objects[i]);
      if (objects.some((o) => !o || typeof o.path !== 'string')) return undefined;
      this.hits.add(name);
      return {
        ...(entry.skipped ? {skipped: entry.skipped} : {}),
        ...(entry.checked !== undefined ? {checked: entry.checked} : {}),
        objects, ...(typeof entry.s === 'number' ? {startup: entry.s} : {}), problems: entry.problems, failedPreloads: entry.failedPreloads,
      };
    } catch {
      return undefined;
    }
  }

  /**
   * The facts the verdict of `name` rests on, as this run answered it from the file or kept it
   * (undefined: it did neither, a verdict that rests on more than its facts say).
   */
  factsOf(name: string): Array<[InputKind, string, string]> | undefined {
    const fresh = this.fresh.get(name);
    if (fresh) return factsIn(fresh.shared, fresh.inputs);
    if (!this.hits.has(name)) return undefined;
    return this.loaded!.files[name]!.i.map((i) => this.loaded!.inputs[i]!);
  }

  /**
   * The files this run found unchanged (a stat input that still reads the same), as (device, inode):
   * what a report keys objects by (check.ts FileNames), known without a second stat.
   */
  unchangedFiles(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [i, holds] of this.holds) {
      const input = this.loaded?.inputs[i];
      if (!holds || !Array.isArray(input) || input[0] !== 's' || input[2] === '-') continue;
      const [dev, ino] = String(input[2]).split(':');
      if (dev && ino) out.set(input[1], `${dev}:${ino}`);
    }
    return out;
  }

  private holdsNow(i: number): boolean {
    let holds = this.holds.get(i);
    if (holds === undefined) {
      const input = this.loaded!.inputs[i];
      // A cached check of the PyTorch image resolved 139 image paths link by link (5 ms): the 18 directories they pass through tell the same.
      holds = Array.isArray(input) && ((input[0] === 'h' && this.linkDirsHold()) ||
        currentValue(input[0], input[1], this.options.sysroot, this.options.platform, this.options.cwd) === input[2]);
      this.holds.set(i, holds);
    }
    return holds;
  }

  private linkDirsHold(): boolean {
    this.linkProofHolds ??= linksHold(this.loaded?.links, this.options.sysroot, this.loaded!.inputs);
    return this.linkProofHolds;
  }

  /** A result just computed from `inputs` (and the check's shared facts); kept when it may be. */
  store(name: string, inputs: InputSet, shared: InputSet, result: FileVerdict, named = false): void {
    if (result.problems.some((p) => isFailing(p, false))) return;
    const settled = this.startedAt - SETTLE_MS;
    if (inputs.newest >= settled || shared.newest >= settled) return;
    for (const [dev, path] of [...inputs.devices, ...shared.devices]) if (this.onNetworkFs(dev, path)) return;
    this.fresh.set(name, {inputs, shared, result, named});
  }

  private onNetworkFs(dev: number, path: string): boolean {
    return onNetworkFs(this.fsTypes, dev, path);
  }

  /**
   * Writes the cache file when this run added results: the old ones still valid as far as this
   * run knows, and the new ones, atomically (a reader sees the old file or the new one).
   * A read-only store is not an error: the check just is not cached.
   */
  save(): void {
    if (this.fresh.size === 0 && this.stale.size === 0) return;
    const inputs: Array<[InputKind, string, string]> = [];
    const inputIndex = new Map<string, number>();
    const objects: CheckedObject[] = [];
    const objectIndex = new Map<string, number>();
    const input = (kind: InputKind, path: string, value: string): number => {
      const k = `${inputKey(kind, path)}\0${value}`;
      let i = inputIndex.get(k);
      if (i === undefined) {
        inputIndex.set(k, i = inputs.length);
        inputs.push([kind, path, value]);
      }
      return i;
    };
    const object = (o: CheckedObject): number => {
      const k = JSON.stringify(o);
      let i = objectIndex.get(k);
      if (i === undefined) {
        objectIndex.set(k, i = objects.length);
        objects.push(o);
      }
      return i;
    };
    const files: Record<string, FileEntry> = {};
    let count = 0;
    const add = (name: string, idx: number[], r: FileVerdict, named: boolean) => {
      files[name] = {
        i: idx, ...(named ? {n: 1 as const} : {}), ...(r.skipped ? {skipped: r.skipped} : {}), ...(r.checked !== undefined ? {checked: r.checked} : {}),
        o: r.objects.map(object), ...(r.startup !== undefined ? {s: r.startup} : {}), problems: r.problems, failedPreloads: r.failedPreloads,
      };
      count++;
    };
    for (const [name, {inputs: own, shared, result, named}] of this.fresh) {
      add(name, factsIn(shared, own).map(([kind, path, value]) => input(kind, path, value)), result, named);
    }
    // Results of earlier runs this one neither replaced nor found stale, up to the bound.
    if (this.loaded) {
      for (const [name, entry] of Object.entries(this.loaded.files)) {
        if (count >= MAX_ROOTS) break;
        if (this.fresh.has(name) || this.stale.has(name)) continue;
        const old = this.loaded.inputs;
        if (!Array.isArray(entry.i) || !Array.isArray(entry.o) || !entry.i.every((i) => Array.isArray(old[i]))) continue;
        add(name, entry.i.map((i) => input(old[i][0], old[i][1], old[i][2])), {
          skipped: entry.skipped, checked: entry.checked, objects: entry.o.map((i) => this.loaded!.objects[i]),
          ...(typeof entry.s === 'number' ? {startup: entry.s} : {}), problems: entry.problems, failedPreloads: entry.failedPreloads,
        }, entry.n === 1);
      }
    }
    const links = proveLinks(inputs, this.options.sysroot, this.startedAt - SETTLE_MS, (dev, path) => this.onNetworkFs(dev, path));
    const data: CacheFile = {format: FORMAT, key: this.keyText, inputs, objects, files, ...(links ? {links} : {})};
    try {
      writeFileSafely(this.file, JSON.stringify(data), {durable: false});
      prune(this.options.dir, this.file);
    } catch {
      // a read-only or full store: the next check is simply not faster
    }
  }
}

/**
 * A name for the cache file of a key: four 32-bit FNV-1a hashes of its text (from other offset
 * bases), 32 hex digits. Not node:crypto: loading it cost a cached check 15-65 ms, and a
 * collision is harmless (the file stores its whole key and is used only when that key is the same).
 */
export function keyHash(text: string): string {
  // Four locals, not an array of lanes: it runs once per check, in the interpreter, where each
  // array access cost (0.8-1.4 ms for a 400-character key on Node.js 24; now 0.2 ms). Same hash.
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  let c = 0x1b873593;
  let d = 0x6b43a9b5;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    a = Math.imul(a ^ ch, 0x01000193);
    b = Math.imul(b ^ (ch + 1), 0x01000193);
    c = Math.imul(c ^ (ch + 2), 0x01000193);
    d = Math.imul(d ^ (ch + 3), 0x01000193);
  }
  return [a, b, c, d].map((h) => (h >>> 0).toString(16).padStart(8, '0')).join('');
}

/** Whether device `dev` (holding `path`) is a network file system; `types` keeps the answers of a run. */
export function onNetworkFs(types: Map<number, boolean>, dev: number, path: string): boolean {
  let network = types.get(dev);
  if (network === undefined) {
    try {
      network = NETWORK_FS.has(Number(statfsSync(path).type) >>> 0);
    } catch {
      network = true;
    }
    types.set(dev, network);
  }
  return network;
}

/** Keeps the `max` most recently written cache files of `dir`. */
export function prune(dir: string, keep: string, max = MAX_FILES): void {
  const entries = readdirSync(dir).filter((n) => n.endsWith('.json')).map((n) => {
    const path = join(dir, n);
    try {
      return {path, mtime: statSync(path).mtimeMs};
    } catch {
      return {path, mtime: 0};
    }
  });
  if (entries.length <= max) return;
  entries.sort((a, b) => b.mtime - a.mtime);
  for (const e of entries.slice(max)) {
    if (e.path === keep) continue;
    try {
      unlinkSync(e.path);
    } catch {
      // another check removed it
    }
  }
}

let stamp: string | undefined;

/**
 * The identity of the code that computes the results: a new build or an upgrade of cudaenv
 * starts a new cache. The bundle of the start-up path is one file; otherwise every module of
 * the loader model (the elf/ directory above this one, every stage) counts.
 */
export function codeStamp(): string {
  if (stamp !== undefined) return stamp;
  const self = fileURLToPath(import.meta.url);
  const files: string[] = [];
  if (basename(self).includes('bundle')) {
    files.push(self);
  } else {
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, {withFileTypes: true})) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (entry.name.endsWith('.js') || entry.name.endsWith('.ts')) files.push(path);
      }
    };
    try {
      walk(dirname(dirname(self)));
    } catch {
      // listed below by itself
    }
    if (files.length === 0) files.push(self);
  }
  stamp = files.sort().map((f) => {
    try {
      return `${f}=${identity(statSync(f))}`;
    } catch {
      return `${f}=-`;
    }
  }).join('\n');
  return stamp;
}
