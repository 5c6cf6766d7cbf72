import {CudaenvError, UsageError} from '../errors.js';
import {knownComponent} from '../versions/releases.js';
import {compareVersions, parseVersion} from '../versions/version.js';
import {artifactFor, type Component, type Manifest} from './manifest.js';

export const PROFILES = ['minimal', 'devel', 'full'] as const;
export type Profile = typeof PROFILES[number];

/**
 * A part of a toolkit a profile expects, named by what it is rather than by one manifest key:
 * NVIDIA renames components (CCCL came as `cuda_cccl` up to 13.1, as `cccl` from 13.2) and
 * splits them (`cuda_crt` and `libnvvm` left `cuda_nvcc` in 13.0).
 */
export interface Part {
  /** Stable name (`--json`): `cccl`. */
  id: string;
  /** For messages: what is lost without it. */
  what: string;
  /** The manifest keys it comes under, the newest name first. */
  names: readonly string[];
  /** The first release that has it: older ones are known not to. */
  since?: string;
}

/** nvcc and what it needs to compile and link. */
const MINIMAL: readonly Part[] = [
  {id: 'nvcc', what: 'the compiler nvcc', names: ['cuda_nvcc']},
  {id: 'cudart', what: 'the CUDA runtime (libcudart, cuda_runtime.h)', names: ['cuda_cudart']},
  {id: 'cccl', what: 'the CCCL headers (Thrust, CUB, libcu++: #include <thrust/...>, <cub/...>, <cuda/std/...>)', names: ['cccl', 'cuda_cccl']},
  {id: 'crt', what: 'nvcc\'s crt headers (split out of cuda_nvcc in 13.0)', names: ['cuda_crt'], since: '13.0.0'},
  {id: 'nvvm', what: 'NVVM, nvcc\'s device compiler (cicc, libdevice; split out of cuda_nvcc in 13.0)', names: ['libnvvm'], since: '13.0.0'},
];
const DEVEL_EXTRA: readonly Part[] = [
  {id: 'cublas', what: 'cuBLAS', names: ['libcublas']},
  {id: 'cufft', what: 'cuFFT', names: ['libcufft']},
  {id: 'curand', what: 'cuRAND', names: ['libcurand']},
  {id: 'cusolver', what: 'cuSOLVER', names: ['libcusolver']},
  {id: 'cusparse', what: 'cuSPARSE', names: ['libcusparse']},
  {id: 'nvrtc', what: 'NVRTC, the runtime compiler', names: ['cuda_nvrtc']},
  {id: 'nvjitlink', what: 'nvJitLink', names: ['libnvjitlink'], since: '12.0.0'},
  {id: 'cupti', what: 'CUPTI, the profiling interface', names: ['cuda_cupti']},
  {id: 'nvtx', what: 'NVTX', names: ['cuda_nvtx']},
  {id: 'nvml_dev', what: 'the NVML headers and stub', names: ['cuda_nvml_dev']},
  {id: 'profiler_api', what: 'the profiler API header', names: ['cuda_profiler_api'], since: '11.8.0'},
];

/** The parts a profile expects (full: those of devel, checked; it also takes every other toolkit component). */
export function profileParts(profile: Profile): readonly Part[] {
  return profile === 'minimal' ? MINIMAL : [...MINIMAL, ...DEVEL_EXTRA];
}

/** The part a manifest key is one name of (`cuda_cccl` and `cccl`: cccl). */
export function partOf(name: string): Part | undefined {
  return [...MINIMAL, ...DEVEL_EXTRA].find((p) => p.names.includes(name));
}

/**
 * Drivers, kernel modules, fabric managers and switch/NIC tools: machine software, not a toolkit.
 * They go with the installed driver (or the machine), once per machine; inside a toolkit prefix
 * they would shadow the real driver (libcuda) or be unusable. Each with why, for the refusal.
 */
const MACHINE_SOFTWARE: Record<string, string> = {
  nvidia_driver: 'the NVIDIA driver (kernel modules and libcuda) belongs to the machine, not to a toolkit',
  cuda_compat: 'the CUDA forward-compatibility libcuda must match the installed driver, not a toolkit',
  fabricmanager: 'the NVSwitch fabric manager is a system service of the machine',
  imex: 'the IMEX daemon (multi-node NVLink) is a system service of the machine',
  libnvidia_nscq: 'the NVSwitch query library must match the installed driver',
  nvidia_fs: 'nvidia-fs is the GPUDirect Storage kernel module',
  driver_assistant: 'the driver assistant installs drivers on the machine',
  mft: 'the Mellanox firmware tools manage NICs and switches, not CUDA code',
  nvlsm: 'the NVLink subnet manager is a system service of the machine',
  collectx_bringup: 'CollectX is a monitoring service of the machine',
  libnvsdm: 'the NVSwitch device monitoring library must match the installed driver',
};

/** Why a component is machine software, or undefined for toolkit parts (mft_autocomplete, mft_oem: like mft). */
export function machineSoftwareReason(name: string): string | undefined {
  return MACHINE_SOFTWARE[name] ?? (/^mft(_|$)/.test(name) ? MACHINE_SOFTWARE.mft : undefined);
}

/** Where a component has archives: platforms, and the CUDA variants under a platform (cuDNN style). */
export function whereAvailable(component: Component): string {
  return [...component.platforms.entries()]
    .map(([platform, entry]) => entry instanceof Map ? `${platform} (${[...entry.keys()].join(', ')})` : platform)
    .join(', ') || 'no platform';
}

export function parseProfile(text: string): Profile {
  if ((PROFILES as readonly string[]).includes(text)) return text as Profile;
  throw new UsageError(`--profile ${JSON.stringify(text)} is not a profile`, `Use ${PROFILES.join(', ')}.`);
}

/** A part a profile expects that a release lacks (and is not known to lack). */
export interface MissingPart {
  part: string;
  what: string;
  /** Every manifest name it was looked for under. */
  names: string[];
}

export interface ComponentPlan {
  /** Manifest keys to install, sorted. */
  names: string[];
  /** Parts the profile expects that the release has no archive of for the platform: named, never dropped in silence. */
  missing: MissingPart[];
  /** Toolkit components of the release that cudaenv knows nothing of (newer than its tables), not in the profile. */
  unknown: string[];
  /** What cudaenv did with names it was given (a --components name the release has under another). */
  notes: string[];
}

function hasArchive(manifest: Manifest, name: string, platform: string): boolean {
  const c = manifest.components.get(name);
  return c !== undefined && artifactFor(c, platform) !== undefined;
}

/** Whether a release is known to predate a part (no cuda_crt before 13.0). */
function predates(label: string, part: Part): boolean {
  if (part.since === undefined) return false;
  const v = parseVersion(label);
  return v !== undefined && compareVersions(v, parseVersion(part.since)!) < 0;
}

/** The manifest key a part comes under in this release for the platform, the newest name first. */
function keyFor(manifest: Manifest, part: Part, platform: string): string | undefined {
  return part.names.find((n) => hasArchive(manifest, n, platform));
}

/** What a profile installs of a release, and what it expects that the release lacks. */
export function planProfile(profile: Profile, manifest: Manifest, platform: string): ComponentPlan {
  const available = [...manifest.components.values()].filter((c) => artifactFor(c, platform) !== undefined).map((c) => c.key);
  const toolkit = available.filter((k) => machineSoftwareReason(k) === undefined);
  const chosen = new Set<string>(profile === 'full' ? toolkit : []);
  const missing: MissingPart[] = [];
  for (const part of profileParts(profile)) {
    if (predates(manifest.label, part)) continue;
    const key = keyFor(manifest, part, platform);
    if (key !== undefined) chosen.add(key);
    else missing.push({part: part.id, what: part.what, names: [...part.names]});
  }
  const unknown = profile === 'full' ? [] : toolkit.filter((k) => !chosen.has(k) && partOf(k) === undefined && !knownComponent(k)).sort();
  return {names: [...chosen].sort(), missing, unknown, notes: []};
}

export function profileComponents(profile: Profile, manifest: Manifest, platform: string): string[] {
  return planProfile(profile, manifest, platform).names;
}

/** The components to install: `--components` alone is exact; with `--profile` it adds to the profile. */
export function selectComponents(options: {manifest: Manifest; platform: string; profile?: Profile; components?: string[]; allowDriverComponents?: boolean}): string[] {
  return planComponents(options).names;
}

/** selectComponents, with what the profile expects and the release lacks, and the components cudaenv does not know. */
export function planComponents(options: {manifest: Manifest; platform: string; profile?: Profile; components?: string[]; allowDriverComponents?: boolean}): ComponentPlan {
  const {manifest, platform} = options;
  const plan: ComponentPlan = options.components === undefined || options.profile !== undefined
    ? planProfile(options.profile ?? 'devel', manifest, platform) : {names: [], missing: [], unknown: [], notes: []};
  const chosen = new Set(plan.names);
  for (const asked of options.components ?? []) {
    // A part renamed since (cuda_cccl -> cccl) is found under either name.
    const part = manifest.components.has(asked) ? undefined : partOf(asked);
    const renamed = part?.names.find((n) => n !== asked && manifest.components.has(n));
    const name = renamed ?? asked;
    if (renamed !== undefined) plan.notes.push(`--components ${asked}: CUDA ${manifest.label} has it as ${renamed}, which is installed`);
    const component = manifest.components.get(name);
    if (!component) {
      throw new UsageError(`CUDA ${manifest.label} has no component ${JSON.stringify(name)}`,
        `Components of ${manifest.label}: ${[...manifest.components.keys()].sort().join(', ')}`);
    }
    const machine = machineSoftwareReason(name);
    if (machine !== undefined && !options.allowDriverComponents) {
      const only = artifactFor(component, platform) ? '' : `; it exists only for ${whereAvailable(component)}`;
      throw new UsageError(`${name} is not part of a CUDA toolkit: ${machine}${only}`,
        `Install it with the driver (your distribution's packages or NVIDIA's installer). To put it into the toolkit prefix anyway, add --allow-driver-components.`);
    }
    if (!artifactFor(component, platform)) {
      throw new UsageError(`the component ${name} of CUDA ${manifest.label} has no archive for ${platform}`,
        `It exists for: ${whereAvailable(component)}.`);
    }
    chosen.add(name);
  }
  if (chosen.size === 0) {
    throw new CudaenvError(`CUDA ${manifest.label} has no components for ${platform}`, {
      hint: 'Choose another --arch, or another release (cudaenv ls-remote).', code: 'no-components',
    });
  }
  const names = [...chosen].sort();
  return {...plan, names, unknown: plan.unknown.filter((u) => !chosen.has(u))};
}

/**
 * The warning for parts a release lacks: what each is, the names it was looked for under, what
 * breaks, and what to do (a component cudaenv does not know may be the part under a new name).
 */
export function describeMissing(label: string, platform: string, plan: Pick<ComponentPlan, 'missing' | 'unknown'>): string {
  const parts = plan.missing.map((m) => `${m.what} (looked for as ${m.names.join(' or ')})`).join('; ');
  const it = plan.missing.length === 1 ? 'it' : 'them';
  const todo = plan.unknown.length > 0
    ? `CUDA ${label} has components cudaenv does not know (${plan.unknown.join(', ')}): if one of them is the part under a new name, add it with --components NAME`
    : `install ${it} from elsewhere, or choose another release (\`cudaenv ls-remote\`)`;
  return `CUDA ${label} has no archive for ${platform} of ${parts}: installed without ${it}, so code that needs ${it} will not build; ${todo}`;
}

/** The note for toolkit components cudaenv does not know, which a profile does not install. */
export function describeUnknown(label: string, profile: Profile, unknown: string[]): string {
  return `CUDA ${label} has components cudaenv does not know, not in the ${profile} profile: ${unknown.join(', ')}; add them with --components (or use --profile full) if you need them`;
}

/** Splits `--components a,b,c`. */
export function parseComponentList(text: string): string[] {
  const names = text.split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) {
    if (!/^[A-Za-z0-9_.+-]{1,100}$/.test(n)) throw new UsageError(`--components: ${JSON.stringify(n)} is not a component name`, 'Example: --components cuda_nvcc,cuda_cudart');
  }
  if (names.length === 0) throw new UsageError('--components is empty', 'Example: --components cuda_nvcc,cuda_cudart');
  return names;
}
