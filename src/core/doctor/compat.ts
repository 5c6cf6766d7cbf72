import {readdirSync} from 'node:fs';
import {join} from 'node:path';
import {installedLabels} from '../store/registry.js';
import {quoteSh} from '../text/quote.js';
// LD_LIBRARY_PATH as ld.so splits it: ':' and ';'.
import {splitLdLibraryPath} from '../elf/api.js';
import {compareVersions, parseVersion} from '../versions/version.js';
import type {DriverFact} from './driver.js';
import {libcudaVersion} from '../versions/driver-version.js';
import {
  compareDriverVersions, driverSupport, newestFullySupported, newestKnownToolkit, newestMajorViaMvc, parseToolkit,
} from '../versions/driver-table.js';
import {driverNewerThanTable, driverTableNewest, driverTableOldest, type DriverRequirement} from '../versions/driver-table.js';
import {displayPath, sysPath, sysRealpath} from './sysroot.js';
import type {ActiveToolkit} from './toolkit.js';
import type {DoctorContext, Finding} from './types.js';

export interface ForwardCompatLib {
  /** The compat directory (e.g. /usr/local/cuda-12.8/compat). */
  dir: string;
  /** The user-mode driver version of its libcuda.so.<version>. */
  version: string;
  /** Whether LD_LIBRARY_PATH puts it before the system's libcuda. */
  enabled: boolean;
}

export interface DriverFacts {
  version: string | null;
  source: string | null;
  evidence: string | null;
  kernelModule: string | null;
  /** False: only the user-space driver is installed, no kernel module is loaded; null: not known (no driver, or nvidia-smi). */
  kernelModuleLoaded: boolean | null;
  /** The newest release the driver supports with every feature. */
  newestFullySupported: string | null;
  /** The newest major it runs through minor-version compatibility. */
  newestMajorViaMinorVersionCompatibility: number | null;
  /** The driver is newer than the newest release's minimum in cudaenv's driver table: it may fully support releases the table does not list. */
  newerThanDriverTable: boolean;
  forwardCompat: ForwardCompatLib[];
}

/** cuda-compat packages install `compat/libcuda.so.<version>` inside a versioned toolkit directory. */
export function findForwardCompat(ctx: DoctorContext, active: ActiveToolkit | undefined): ForwardCompatLib[] {
  const dirs = new Set<string>();
  if (active?.real) dirs.add(join(active.real, 'compat'));
  const local = sysPath(ctx, '/usr/local');
  let names: string[] = [];
  try {
    names = readdirSync(local);
  } catch {
    // no /usr/local
  }
  for (const n of names.sort()) if (/^cuda(-[\w.]+)?$/.test(n)) dirs.add(join(local, n, 'compat'));
  const ldEntries = splitLdLibraryPath(ctx.env.LD_LIBRARY_PATH).map((e) => (e ? sysRealpath({sysroot: ''}, e) : undefined));
  const out: ForwardCompatLib[] = [];
  const seen = new Set<string>();
  for (const dir of dirs) {
    const real = sysRealpath(ctx, dir);
    if (!real || seen.has(real)) continue;
    seen.add(real);
    let files: string[];
    try {
      files = readdirSync(real);
    } catch {
      continue;
    }
    const version = files.map(libcudaVersion).find((v) => v !== undefined);
    if (!version) continue;
    out.push({dir: displayPath(ctx, dir), version, enabled: ldEntries.includes(real)});
  }
  return out;
}

export function driverFacts(driver: DriverFact | undefined, forwardCompat: ForwardCompatLib[]): DriverFacts {
  return {
    version: driver?.version ?? null,
    source: driver?.source ?? null,
    evidence: driver?.evidence ?? null,
    kernelModule: driver?.kernelModule ?? null,
    kernelModuleLoaded: driver === undefined ? null : driver.kernelModuleLoaded ?? (driver.source === 'nvidia-smi' ? null : true),
    newestFullySupported: driver ? newestFullySupported(driver.version) ?? null : null,
    newestMajorViaMinorVersionCompatibility: driver ? newestMajorViaMvc(driver.version) ?? null : null,
    newerThanDriverTable: driver ? driverNewerThanTable(driver.version) : false,
    forwardCompat,
  };
}

/** The highest installed version the driver supports fully (or, failing that, through minor-version compatibility). */
function bestInstalledFor(ctx: DoctorContext, driver: string): {label: string; full: boolean} | undefined {
  let labels: string[] = [];
  try {
    labels = installedLabels(ctx.paths);
  } catch {
    return undefined;
  }
  const byNewest = labels.filter((l) => parseVersion(l)).sort((a, b) => compareVersions(parseVersion(b)!, parseVersion(a)!));
  const full = byNewest.find((l) => driverSupport(driver, l).kind === 'full');
  if (full) return {label: full, full: true};
  const mvc = byNewest.find((l) => driverSupport(driver, l).kind === 'minor-version-compatibility');
  return mvc ? {label: mvc, full: false} : undefined;
}

/**
 * The active toolkit against the driver: an error when the driver is too old for it,
 * a warning when it only runs through minor-version compatibility, and what
 * forward compatibility (cuda-compat) changes.
 */
export function driverFindings(ctx: DoctorContext, driver: DriverFact | undefined, active: ActiveToolkit | undefined, compat: ForwardCompatLib[]): Finding[] {
  const findings: Finding[] = [];
  if (!driver) {
    findings.push({
      id: 'driver.none',
      severity: 'info',
      title: 'No NVIDIA driver found: toolkits can compile here, CUDA programs cannot run',
      evidence: ['/proc/driver/nvidia/version, /sys/module/nvidia/version, libcuda.so.1 and nvidia-smi: none found'],
      fix: null,
    });
    return findings;
  }
  for (const c of compat) {
    findings.push({
      id: 'driver.forward-compat',
      severity: 'info',
      title: `A cuda-compat forward-compatibility driver ${c.version} is present${c.enabled ? ' and on LD_LIBRARY_PATH' : ' (not on LD_LIBRARY_PATH, so unused)'}`,
      evidence: [`${c.dir}/libcuda.so.${c.version}`, `kernel driver ${driver.version}`],
      fix: null,
    });
  }
  const newest = driverTableNewest();
  if (driverNewerThanTable(driver.version)) {
    findings.push({
      id: 'driver.newer-than-table',
      severity: 'info',
      title: `Driver ${driver.version} is newer than every driver in cudaenv's driver table (CUDA ${driverTableOldest()} to ${newest.toolkit}; ${newest.toolkit} needs >= ${newest.driver}): it fully supports CUDA ${newest.toolkit} and may support newer releases the table does not list`,
      evidence: [`driver ${driver.version} (${driver.evidence})`, `newest row of the driver table: CUDA ${newest.toolkit}, driver >= ${newest.driver}`],
      fix: 'NVIDIA\'s release notes list the minimum driver of each release (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/); a newer cudaenv carries a newer table',
    });
  }
  if (!active?.version) return findings;
  const toolkit = active.version;
  const support = driverSupport(driver.version, toolkit);
  const name = `CUDA ${toolkit}${active.label ? '' : ` (${active.source})`}`;
  const tk = parseToolkit(toolkit)!;
  const newestFull = newestFullySupported(driver.version);
  const enabledCompat = compat.find((c) => c.enabled);
  const evidence = [`driver ${driver.version} (${driver.evidence})`, `active toolkit ${name} at ${active.real ?? active.dir}`];

  if (support.kind === 'full') return findings;
  if (support.kind === 'unknown') {
    findings.push({
      id: 'driver.toolkit-unknown',
      severity: 'info',
      title: support.required?.atLeast
        ? `${name} is newer than every release in cudaenv's driver table (newest ${support.required.row}, which needs driver >= ${support.required.driver}): its own minimum driver is not known; driver ${driver.version} meets ${support.required.row}'s`
        : `${name} is not in the driver table (newest known ${newestKnownToolkit()}); its minimum driver cannot be checked`,
      evidence,
      fix: null,
    });
    return findings;
  }
  if (enabledCompat && compareDriverVersions(enabledCompat.version, support.required.driver) >= 0) {
    findings.push({
      id: 'driver.forward-compat-in-use',
      severity: 'warning',
      title: `${name} needs driver ${needs(support.required)}; it runs on kernel driver ${driver.version} only through the cuda-compat driver ${enabledCompat.version}`,
      evidence: [...evidence, `${enabledCompat.dir} is on LD_LIBRARY_PATH`],
      fix: 'Forward compatibility works only on data-center GPUs and select RTX boards, and only across supported driver branches; upgrading the driver removes the dependency.',
    });
    return findings;
  }
  const best = bestInstalledFor(ctx, driver.version);
  const install = newestFull ? `cudaenv install ${newestFull} && cudaenv use ${newestFull}` : undefined;
  if (support.kind === 'minor-version-compatibility') {
    // Only a fully supported version is an improvement over the active one.
    const useBest = best?.full && best.label !== active.label ? `cudaenv use ${best.label}` : install;
    findings.push({
      id: 'driver.minor-version-compatibility',
      severity: 'warning',
      title: `${name} runs on driver ${driver.version} only through minor-version compatibility (full support needs ${needs(support.required)})`,
      evidence: [...evidence, `CUDA ${tk.major}.x minor-version compatibility floor: ${support.floor}`, 'PTX built by this toolkit cannot be JIT-compiled by this driver (cudaErrorUnsupportedPtxVersion); newer-driver features fail with cudaErrorCallRequiresNewerDriver'],
      fix: `Upgrade the driver to >= ${support.required.driver}${useBest ? `, or \`${useBest}\` (driver ${driver.version} fully supports up to CUDA ${newestFull ?? '?'})` : ''}`,
    });
    return findings;
  }
  const useBest = best ? `cudaenv use ${best.label}` : install;
  const presentCompat = compat.find((c) => compareDriverVersions(c.version, support.required.driver) >= 0);
  const fixes = [useBest ? `\`${useBest}\`` : undefined, `upgrade the driver to >= ${support.required.driver}`,
    presentCompat ? `put the cuda-compat driver first: export LD_LIBRARY_PATH=${quoteSh(presentCompat.dir)}\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} (data-center GPUs only)` : undefined].filter(Boolean);
  findings.push({
    id: 'driver.too-old-for-toolkit',
    severity: 'error',
    title: `${name} needs NVIDIA driver ${needs(support.required)}${support.floor ? ` (>= ${support.floor} with minor-version compatibility)` : ''}; this machine has ${driver.version}`,
    evidence: [...evidence, newestFull ? `the newest CUDA this driver fully supports: ${newestFull}` : 'this driver supports no CUDA release in the table',
      ...(best ? [`the newest installed version that works: ${best.label}${best.full ? '' : ' (minor-version compatibility)'}`] : [])],
    fix: fixes.join('; or '),
  });
  return findings;
}

/** `>= 550.54.15`, or for a release newer than the table the lower bound it is known to need. */
function needs(required: DriverRequirement): string {
  return required.atLeast
    ? `>= ${required.driver} at least (${required.row}'s minimum: it is newer than every release in cudaenv's driver table, so its own is not known)`
    : `>= ${required.driver}`;
}
