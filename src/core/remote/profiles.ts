import {CudaenvError, UsageError} from '../errors.js';
import {artifactFor, type Component, type Manifest} from './manifest.js';

export const PROFILES = ['minimal', 'devel', 'full'] as const;
export type Profile = typeof PROFILES[number];

/** nvcc and what it needs to compile and link. CUDA 13 split the crt headers and NVVM out of cuda_nvcc. */
const MINIMAL = ['cuda_nvcc', 'cuda_cudart', 'cuda_cccl'];
const MINIMAL_13 = ['cuda_crt', 'libnvvm'];
const DEVEL_EXTRA = [
  'libcublas', 'libcufft', 'libcurand', 'libcusolver', 'libcusparse',
  'cuda_nvrtc', 'libnvjitlink', 'cuda_cupti', 'cuda_nvtx', 'cuda_nvml_dev', 'cuda_profiler_api',
];
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

export function profileComponents(profile: Profile, manifest: Manifest, platform: string): string[] {
  const available = [...manifest.components.values()].filter((c) => artifactFor(c, platform) !== undefined).map((c) => c.key);
  if (profile === 'full') return available.filter((k) => machineSoftwareReason(k) === undefined).sort();
  const major = Number(manifest.label.split('.')[0]);
  const wanted = [...MINIMAL, ...(major >= 13 ? MINIMAL_13 : []), ...(profile === 'devel' ? DEVEL_EXTRA : [])];
  // A profile names what a release may have: older releases lack some (no cuda_crt before 13).
  return wanted.filter((k) => available.includes(k));
}

/** The components to install: `--components` alone is exact; with `--profile` it adds to the profile. */
export function selectComponents(options: {manifest: Manifest; platform: string; profile?: Profile; components?: string[]; allowDriverComponents?: boolean}): string[] {
  const {manifest, platform} = options;
  const chosen = new Set(options.components === undefined || options.profile !== undefined
    ? profileComponents(options.profile ?? 'devel', manifest, platform) : []);
  for (const name of options.components ?? []) {
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
  return [...chosen].sort();
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
