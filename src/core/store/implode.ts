import {existsSync, lstatSync, readlinkSync, realpathSync, rmSync} from 'node:fs';
import {join, resolve} from 'node:path';
import {CudaenvError} from '../errors.js';
import type {StorePaths} from './paths.js';
import {listVersions} from './registry.js';

export interface ImplodePlan {
  store: string;
  exists: boolean;
  /** Toolkits cudaenv installed: deleted with the store. */
  installed: string[];
  /** Registered toolkits: only their links go, the directories stay. */
  registered: Array<{version: string; target: string}>;
  /** Machine links into the store (`cudaenv link`): they would dangle. */
  machineLinks: string[];
}

/** What `cudaenv implode` would remove, for the confirmation and --json. */
export function implodePlan(paths: StorePaths, machineLinkCandidates = ['/usr/local/cuda']): ImplodePlan {
  const exists = existsSync(paths.root);
  const versions = exists ? listVersions(paths) : [];
  const store = exists ? realpathSync(paths.root) : paths.root;
  const machineLinks = machineLinkCandidates.filter((link) => {
    try {
      return lstatSync(link).isSymbolicLink() && resolve(link, '..', readlinkSync(link)).startsWith(`${store}/`);
    } catch {
      return false;
    }
  });
  return {
    store: paths.root, exists,
    installed: versions.filter((v) => v.kind === 'installed').map((v) => v.label),
    registered: versions.filter((v) => v.kind === 'registered').map((v) => ({version: v.label, target: v.target!})),
    machineLinks,
  };
}

/**
 * Deletes the store. Registered toolkits are links there: removing a link never touches the
 * directory it points to. A machine link into the store (/usr/local/cuda) is refused first:
 * it would dangle, and only `sudo cudaenv unlink` puts back what it replaced.
 */
export function implode(paths: StorePaths, plan: ImplodePlan): void {
  const refusal = implodeRefusal(paths, plan);
  if (refusal) throw refusal;
  if (!plan.exists) return;
  rmSync(paths.root, {recursive: true, force: true});
}

/** Why implode would delete nothing (for implode and its --dry-run alike), or undefined. */
export function implodeRefusal(paths: StorePaths, plan: ImplodePlan): CudaenvError | undefined {
  if (plan.machineLinks.length > 0) {
    return new CudaenvError(`${plan.machineLinks.join(', ')} points into the store ${plan.store}`, {
      hint: 'Run `sudo cudaenv unlink` first: it restores what `cudaenv link` replaced.', code: 'linked',
    });
  }
  if (!plan.exists) return undefined;
  if (resolve(paths.root) === '/' || resolve(paths.root) === resolve(process.env.HOME ?? '/')) {
    return new CudaenvError(`refusing to delete ${paths.root}: it is not a cudaenv store of its own`, {hint: 'Point CUDAENV_DIR at the store itself.'});
  }
  if (!existsSync(join(paths.root, 'versions')) && !existsSync(paths.shims) && !existsSync(paths.configFile)) {
    return new CudaenvError(`${paths.root} does not look like a cudaenv store (no versions/, shims/ or config.json)`, {hint: 'Check CUDAENV_DIR; nothing was deleted.'});
  }
  return undefined;
}
