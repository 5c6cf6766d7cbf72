import {readFileSync, readdirSync} from 'node:fs';
import {join} from 'node:path';
import type {Receipt} from '../core/remote/install.js';
import {matchesPrefix} from '../core/remote/labels.js';
import type {Manifest} from '../core/remote/manifest.js';
import type {Platform} from '../core/remote/platform.js';
import type {Profile} from '../core/remote/profiles.js';
import type {StorePaths} from '../core/store/paths.js';
import {RECEIPT_FILE} from '../core/store/registry.js';
import {compareVersions, isVersion, parseVersion} from '../core/versions/version.js';

/** What a step asked for, before any manifest is read. */
export interface Request {
  spec: string;
  profile?: Profile;
  components?: string[];
  cudnn?: string;
}

/** A workflow may write `nvcc` for cuda_nvcc and `cublas` for libcublas, as people say them. */
function candidates(name: string): string[] {
  return [name, `cuda_${name}`, `lib${name}`];
}

/** The manifest's name for a component the step wrote (unknown names stay, and the installer refuses them). */
export function manifestComponentName(manifest: Manifest, name: string): string {
  return candidates(name).find((n) => manifest.components.has(n)) ?? name;
}

const RANK: Record<Profile, number> = {minimal: 0, devel: 1, full: 2};

/** Whether an installed toolkit holds at least what the step asks for. */
export function receiptCovers(receipt: Receipt, platform: Platform, req: Request): boolean {
  if (receipt.platform !== platform) return false;
  const profile = req.profile ?? (req.components ? undefined : 'devel');
  if (profile) {
    const had = receipt.profile as Profile | null;
    if (!had || !(had in RANK) || RANK[had] < RANK[profile]) return false;
  }
  const names = new Set(receipt.components.map((c) => c.name));
  for (const wanted of req.components ?? []) {
    if (!candidates(wanted).some((n) => names.has(n))) return false;
  }
  if (req.cudnn !== undefined) {
    const release = receipt.cudnn?.release;
    if (!release || (req.cudnn !== 'latest' && !matchesPrefix(release, req.cudnn))) return false;
  }
  return true;
}

export function readReceipt(dir: string): Receipt | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, RECEIPT_FILE), 'utf8')) as Receipt;
  } catch {
    return undefined;
  }
}

/**
 * The runner's tool cache, as setup-node and setup-python use it: the newest toolkit already
 * there that matches the spec and holds what the step asks for. No network: a self-hosted
 * runner that installed it once serves every later job from disk.
 */
export function findInToolCache(paths: StorePaths, platform: Platform, req: Request): {label: string; dir: string; receipt: Receipt} | undefined {
  let labels: string[];
  try {
    labels = readdirSync(paths.versions).filter(isVersion);
  } catch {
    return undefined;
  }
  labels = labels.filter((l) => req.spec === 'latest' || matchesPrefix(l, req.spec))
    .sort((a, b) => compareVersions(parseVersion(b)!, parseVersion(a)!));
  for (const label of labels) {
    const dir = join(paths.versions, label);
    const receipt = readReceipt(dir);
    if (receipt && receiptCovers(receipt, platform, req)) return {label, dir, receipt};
  }
  return undefined;
}
