import {createHash} from 'node:crypto';
import {readFileSync} from 'node:fs';
import {join} from 'node:path';
import type {CudnnChoice} from '../core/remote/cudnn.js';
import type {Artifact, Manifest} from '../core/remote/manifest.js';
import type {Platform} from '../core/remote/platform.js';
import {writeFileSafely} from '../core/safe-fs/index.js';

/**
 * What a cache entry holds besides the archives: the manifests it was keyed with, so that a
 * run that restores it installs without asking the mirror anything.
 */
export interface Plan {
  format: 1;
  key: string;
  platform: Platform;
  manifest: Manifest;
  cudnn?: CudnnChoice;
}

export const PLAN_FILE = 'plan.json';
export const ARCHIVES_DIR = 'archives';
const KEY_FORMAT = 1;

// Manifests hold Maps (components, platforms, cuDNN variants): JSON keeps them as tagged entry lists.
function replacer(_key: string, value: unknown): unknown {
  return value instanceof Map ? {$map: [...value.entries()]} : value;
}

function reviver(_key: string, value: unknown): unknown {
  if (value && typeof value === 'object' && '$map' in value && Array.isArray((value as {$map: unknown}).$map)) {
    return new Map((value as {$map: Array<[string, unknown]>}).$map);
  }
  return value;
}

export function writePlan(dir: string, plan: Plan): void {
  writeFileSafely(join(dir, PLAN_FILE), `${JSON.stringify(plan, replacer)}\n`);
}

export function readPlan(dir: string): Plan | undefined {
  try {
    const plan = JSON.parse(readFileSync(join(dir, PLAN_FILE), 'utf8'), reviver) as Plan;
    const ok = plan.format === 1 && typeof plan.key === 'string' && plan.manifest?.components instanceof Map;
    return ok ? plan : undefined;
  } catch {
    return undefined;
  }
}

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The part of a key that is known before any manifest is read: release, platform and what
 * the step asked for. The cached entry adds the checksums after it.
 */
export function keyPrefix(options: {platform: Platform; label: string; cudnnLabel?: string; request: unknown}): string {
  const request = sha(JSON.stringify(options.request)).slice(0, 12);
  return `cudaenv-${KEY_FORMAT}-${options.platform}-cuda${options.label}${options.cudnnLabel ? `-cudnn${options.cudnnLabel}` : ''}-${request}-`;
}

/** The manifest's checksums of the chosen archives, as the end of the key: another archive, another entry. */
export function checksumDigest(archives: Array<{name: string; artifact: Artifact}>): string {
  const lines = archives.map((a) => `${a.name} ${a.artifact.sha256} ${a.artifact.size}`).sort();
  return sha(`${lines.join('\n')}\n`).slice(0, 32);
}
