import {readFileSync, readdirSync, realpathSync, renameSync, rmSync, unlinkSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError, UsageError} from '../errors.js';
import {allLinksDirs} from '../link/state.js';
import {quoteSh} from '../text/quote.js';
import {acquireLock, reclaimStaleLocks} from '../store/lock.js';
import {afterVersionsChanged} from '../toolkits/on-change.js';
import type {StorePaths} from '../store/paths.js';
import {describeVersion, installedLabels, listAliases, readGlobal} from '../store/registry.js';
import {resolveSpec} from '../selection/resolve.js';
import {parseSpec} from '../versions/spec.js';
import {findVersionFile, readVersionFile} from '../versions/version-file.js';
import {isLabel} from '../versions/version.js';
import {cleanOtherLeftovers, recoverLeftovers, tempName, versionLockName} from './staging.js';

export interface UninstallResult {
  version: string;
  kind: 'installed' | 'registered';
  /** For a registered toolkit: the directory, left untouched. */
  target: string | null;
  warnings: string[];
}

/**
 * Removes `versions/<label>`: an installed toolkit is renamed into tmp/ (so it stops being
 * listed at once) and deleted there; a registered one only loses its link.
 */
export async function uninstallVersion(paths: StorePaths, label: string, cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): Promise<UninstallResult> {
  if (!isLabel(label)) {
    throw new UsageError(`${JSON.stringify(label)} is not a version label`, 'Give the full version as `cudaenv ls` shows it, for example 12.4.1.');
  }
  const lock = await acquireLock(paths.locks, versionLockName(label), {purpose: `uninstall of CUDA ${label}`});
  try {
    // A copy left aside by a --force install that died is put back (and then removed below).
    recoverLeftovers(paths, label);
    await cleanOtherLeftovers(paths, label);
    reclaimStaleLocks(paths.locks); // as install does: a killed run's locks go with its other leftovers
    const found = describeVersion(paths, label);
    if (!found) {
      throw new CudaenvError(`CUDA ${label} is not installed`, {hint: `Installed: ${installedLabels(paths).join(', ') || 'none'}.`, code: 'not-installed'});
    }
    if (found.site) {
      // A site store is never written by a user's cudaenv (issue 45): its administrator manages it.
      throw new CudaenvError(`CUDA ${label} is the site's: it comes from the site store ${found.store}, which your cudaenv only reads`, {
        hint: `An administrator removes it there: CUDAENV_DIR=${found.store} cudaenv uninstall ${label}. To stop using it yourself, choose another version (cudaenv use, cudaenv global), or install your own copy (cudaenv install ${label} --force), which wins over the site's.`,
        code: 'site-version',
      });
    }
    const warnings = [...shellWarnings(paths, label, env), ...usageWarnings(paths, label, cwd)];
    if (found.kind === 'installed') warnings.push(...linkWarnings(paths, label, found.path));
    if (found.kind === 'registered') {
      unlinkSync(found.path);
    } else {
      const aside = tempName(paths, 'rm', label);
      renameSync(found.path, aside);
      rmSync(aside, {recursive: true, force: true});
    }
    await afterVersionsChanged(paths);
    return {version: label, kind: found.kind, target: found.target ?? null, warnings};
  } finally {
    lock.release();
  }
}

/**
 * The shell this runs in uses the version (issue 44): its PATH, CUDA_HOME and LD_LIBRARY_PATH point
 * into the directory about to go. Its next prompt says so and falls back; this says it now.
 */
function shellWarnings(paths: StorePaths, label: string, env: NodeJS.ProcessEnv): string[] {
  const dir = join(paths.versions, label);
  let pinned = false;
  try {
    pinned = env.CUDAENV_VERSION !== undefined && resolveSpec(paths, parseSpec(env.CUDAENV_VERSION)).label === label;
  } catch {
    // a CUDAENV_VERSION that is no spec is reported by the commands that select
  }
  const inUse = pinned || env._CUDAENV_APPLIED === label ||
    [env.CUDA_HOME, env.CUDA_PATH].some((v) => v !== undefined && (v === dir || v.startsWith(`${dir}/`)));
  if (!inUse) return [];
  const how = pinned ? ` (CUDAENV_VERSION=${env.CUDAENV_VERSION}, set by \`cudaenv use\`)` : '';
  return [`this shell uses CUDA ${label}${how}: its PATH and CUDA_HOME point into the removed directory until its next prompt, which falls back to what is selected here (or run \`cudaenv use VERSION\` now)`];
}

/** Who still wants this version: the global default, the aliases, a .cuda-version here or above. */
function usageWarnings(paths: StorePaths, label: string, cwd: string): string[] {
  const out: string[] = [];
  const labels = installedLabels(paths);
  const global = readGlobal(paths);
  if (global) {
    try {
      if (resolveSpec(paths, parseSpec(global), labels).label === label) {
        out.push(`CUDA ${label} was the global default (global spec ${global}); set another with \`cudaenv global VERSION\``);
      }
    } catch {
      // an unparsable global is reported by the commands that use it
    }
  }
  // An alias keeps its spec: after the removal it selects the next best version, or nothing.
  const rest = labels.filter((l) => l !== label);
  for (const {name, spec} of listAliases(paths)) {
    try {
      const parsed = parseSpec(spec);
      if (resolveSpec(paths, parsed, labels).label !== label) continue;
      const after = resolveSpec(paths, parsed, rest).label;
      const now = after === undefined ? 'nothing installed' : `CUDA ${after}`;
      out.push(`the alias ${name} (${spec}) selected CUDA ${label}; it now selects ${now} (change it with \`cudaenv alias ${name} VERSION\`)`);
    } catch {
      // an alias that resolves to nothing is reported by the commands that use it
    }
  }
  try {
    const path = findVersionFile(cwd);
    const file = path ? readVersionFile(path) : undefined;
    if (file && resolveSpec(paths, file.spec, labels).label === label) {
      out.push(`${file.path} selects CUDA ${label} (spec ${file.spec.text}); it now selects nothing installed`);
    }
  } catch {
    // a broken .cuda-version is reported by the commands that read it
  }
  return out;
}

/**
 * Links that resolve into the version about to be deleted: /usr/local/cuda, and every target
 * `cudaenv link` recorded. They would dangle, and builds and services reading them would break.
 */
function linkWarnings(paths: StorePaths, label: string, dir: string): string[] {
  const targets = new Set(['/usr/local/cuda']);
  const records: string[] = [];
  for (const dir of allLinksDirs(paths)) {
    try {
      records.push(...readdirSync(dir).filter((n) => n.endsWith('.json')).map((n) => join(dir, n)));
    } catch {
      // no link was ever made from this store, or as root
    }
  }
  for (const file of records) {
    try {
      const target = (JSON.parse(readFileSync(file, 'utf8')) as {target?: unknown}).target;
      if (typeof target === 'string' && target.startsWith('/')) targets.add(target);
    } catch {
      // a damaged record is reported by `cudaenv unlink`
    }
  }
  let real: string;
  try {
    real = realpathSync(dir);
  } catch {
    return [];
  }
  return [...targets].filter((t) => {
    try {
      return realpathSync(t) === real;
    } catch {
      return false;
    }
  }).map((t) => `${t} points at CUDA ${label}, which is now removed; point it at another version (cudaenv link VERSION${t === '/usr/local/cuda' ? '' : ` --target ${quoteSh(t)}`}) or restore what was there (cudaenv unlink${t === '/usr/local/cuda' ? '' : ` --target ${quoteSh(t)}`})`);
}
