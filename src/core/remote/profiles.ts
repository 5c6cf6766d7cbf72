import {CudaenvError, UsageError} from '../errors.js';
import {artifactFor, type Manifest} from './manifest.js';

export const PROFILES = ['minimal', 'devel', 'full'] as const;
export type Profile = typeof PROFILES[number];

/** nvcc and what it needs to compile and link. CUDA 13 split the crt headers and NVVM out of cuda_nvcc. */
const MINIMAL = ['cuda_nvcc', 'cuda_cudart', 'cuda_cccl'];
const MINIMAL_13 = ['cuda_crt', 'libnvvm'];
const DEVEL_EXTRA = [
  'libcublas', 'libcufft', 'libcurand', 'libcusolver', 'libcusparse',
  'cuda_nvrtc', 'libnvjitlink', 'cuda_cupti', 'cuda_nvtx', 'cuda_nvml_dev', 'cuda_profiler_api',
];
/** Drivers, kernel modules, fabric managers and switch/NIC tools: machine software, not a toolkit. */
const NEVER_IN_FULL = new Set([
  'nvidia_driver', 'fabricmanager', 'imex', 'libnvidia_nscq', 'nvidia_fs', 'driver_assistant', 'cuda_compat',
  'mft', 'mft_autocomplete', 'mft_oem', 'nvlsm', 'collectx_bringup', 'libnvsdm',
]);

export function parseProfile(text: string): Profile {
  if ((PROFILES as readonly string[]).includes(text)) return text as Profile;
  throw new UsageError(`--profile ${JSON.stringify(text)} is not a profile`, `Use ${PROFILES.join(', ')}.`);
}

export function profileComponents(profile: Profile, manifest: Manifest, platform: string): string[] {
  const available = [...manifest.components.values()].filter((c) => artifactFor(c, platform) !== undefined).map((c) => c.key);
  if (profile === 'full') return available.filter((k) => !NEVER_IN_FULL.has(k)).sort();
  const major = Number(manifest.label.split('.')[0]);
  const wanted = [...MINIMAL, ...(major >= 13 ? MINIMAL_13 : []), ...(profile === 'devel' ? DEVEL_EXTRA : [])];
  // A profile names what a release may have: older releases lack some (no cuda_crt before 13).
  return wanted.filter((k) => available.includes(k));
}

/** The components to install: `--components` alone is exact; with `--profile` it adds to the profile. */
export function selectComponents(options: {manifest: Manifest; platform: string; profile?: Profile; components?: string[]}): string[] {
  const {manifest, platform} = options;
  const chosen = new Set(options.components === undefined || options.profile !== undefined
    ? profileComponents(options.profile ?? 'devel', manifest, platform) : []);
  for (const name of options.components ?? []) {
    const component = manifest.components.get(name);
    if (!component) {
      throw new UsageError(`CUDA ${manifest.label} has no component ${JSON.stringify(name)}`,
        `Components of ${manifest.label}: ${[...manifest.components.keys()].sort().join(', ')}`);
    }
    if (!artifactFor(component, platform)) {
      throw new UsageError(`the component ${name} of CUDA ${manifest.label} has no archive for ${platform}`,
        `It exists for: ${[...component.platforms.keys()].join(', ') || 'no platform'}.`);
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
