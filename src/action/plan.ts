import {createHash} from 'node:crypto';
import {readFileSync} from 'node:fs';
import {join} from 'node:path';
import type {Artifact} from '../core/remote/manifest.js';
import type {Mirror} from '../core/remote/mirror.js';
import type {Platform} from '../core/remote/platform.js';
import {writeFileSafely} from '../core/safe-fs/index.js';

/** One archive of an entry, as the manifest of the run that saved it gave it. */
export interface PlanArchive {
  name: string;
  sha256: string;
  size: number;
}

/**
 * What a cache entry holds besides the archives: what they are, by the manifest of the run that
 * saved them. A run that restores the entry compares it with the manifest it fetched itself
 * (checkPlan): the entry is a record to check, never a manifest to trust.
 */
export interface Plan {
  format: 2;
  key: string;
  platform: Platform;
  /** The mirrors, without credentials (mirrorIdentity). */
  mirror: string;
  cudnnMirror: string | null;
  archives: PlanArchive[];
}

export const PLAN_FILE = 'plan.json';
export const ARCHIVES_DIR = 'archives';
/** 2: the key holds the mirrors and the manifests' own checksums (issue 46); entries of format 1 are not restored. */
const KEY_FORMAT = 2;

export function writePlan(dir: string, plan: Plan): void {
  writeFileSafely(join(dir, PLAN_FILE), `${JSON.stringify(plan)}\n`);
}

export function readPlan(dir: string): Plan | undefined {
  try {
    const plan = JSON.parse(readFileSync(join(dir, PLAN_FILE), 'utf8')) as Plan;
    const ok = plan.format === 2 && typeof plan.key === 'string' && typeof plan.mirror === 'string' && Array.isArray(plan.archives) &&
      // What it says goes into a warning on the log: names and checksums as manifests have them, nothing else.
      plan.archives.every((a) => /^[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}$/.test(a?.name) && /^[0-9a-f]{64}$/.test(a.sha256) && Number.isSafeInteger(a.size));
    return ok ? plan : undefined;
  } catch {
    return undefined;
  }
}

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * A mirror as the cache knows it: its normalised URL (or directory) without user name or password,
 * so that a key never carries credentials (nor a hash of them), and a token that changes does
 * not change the key.
 */
export function mirrorIdentity(mirror: Mirror): string {
  if (mirror.kind === 'file') return mirror.base;
  const url = new URL(mirror.base);
  url.username = '';
  url.password = '';
  return url.href;
}

/**
 * The part of a key the restore looks entries up by: release, platform, what the step asked
 * for and the mirrors it asked them of. The checksums follow it (checksumDigest).
 */
export function keyPrefix(options: {platform: Platform; label: string; cudnnLabel?: string; request: unknown; mirror: string; cudnnMirror: string | null}): string {
  const request = sha(JSON.stringify({request: options.request, mirror: options.mirror, cudnnMirror: options.cudnnMirror})).slice(0, 12);
  return `cudaenv-${KEY_FORMAT}-${options.platform}-cuda${options.label}${options.cudnnLabel ? `-cudnn${options.cudnnLabel}` : ''}-${request}-`;
}

export function planArchives(archives: Array<{name: string; artifact: Artifact}>): PlanArchive[] {
  return archives.map((a) => ({name: a.name, sha256: a.artifact.sha256, size: a.artifact.size})).sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * The end of the key: the manifests' own sha256 (of the bytes fetched) and the chosen archives'
 * checksums. Another manifest (a mirror that changed, or another mirror's), another entry.
 */
export function checksumDigest(manifests: Array<string | undefined>, archives: Array<{name: string; artifact: Artifact}>): string {
  const lines = planArchives(archives).map((a) => `${a.name} ${a.sha256} ${a.size}`);
  return sha(`${manifests.map((m) => `manifest ${m ?? 'unknown'}`).join('\n')}\n${lines.join('\n')}\n`).slice(0, 32);
}

/**
 * What differs between a restored entry's archives and the ones this run's manifest gives
 * (undefined: none): the first difference, for the warning.
 */
export function planDifference(plan: Plan, archives: PlanArchive[]): string | undefined {
  const had = new Map(plan.archives.map((a) => [a.name, a]));
  for (const a of archives) {
    const old = had.get(a.name);
    if (!old) return `it has no archive of ${a.name}`;
    if (old.sha256 !== a.sha256 || old.size !== a.size) return `its ${a.name} is sha256 ${old.sha256} (${old.size} bytes), the manifest now says ${a.sha256} (${a.size} bytes)`;
  }
  if (plan.archives.length !== archives.length) return `it holds archives this step does not ask for (${plan.archives.filter((a) => !archives.some((b) => b.name === a.name)).map((a) => a.name).join(', ')})`;
  return undefined;
}
