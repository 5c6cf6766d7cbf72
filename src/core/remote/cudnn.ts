import {CudaenvError} from '../errors.js';
import {listReleases, loadManifest, checkRemoteSpec} from './catalog.js';
import {compareLabels, matchesPrefix} from './labels.js';
import {artifactFor, type Artifact, type Component, type Manifest} from './manifest.js';
import type {Mirror} from './mirror.js';

export interface CudnnChoice {
  label: string;
  component: string;
  version: string;
  /** `cuda<major>`: the CUDA major the installed archive is built for (never merely the one asked for). */
  variant: string;
  /** `variant`: a manifest with `cuda_variant` entries; `per-major`: one manifest per CUDA major. */
  style: 'variant' | 'per-major';
  artifact: Artifact;
  manifest: Manifest;
}

/** The CUDA major an archive name says it is built for (`..._cuda12-archive.tar.xz`). */
function archiveMajor(artifact: Artifact): number | undefined {
  const m = /_cuda(\d+)-archive\.[a-z.]+$/.exec(artifact.relativePath);
  return m ? Number(m[1]) : undefined;
}

/**
 * The archive of a cuDNN release built for `cudaMajor`, and for which CUDA it really is, or
 * why there is none. Variant manifests say it in the key (`cuda12`); the older per-CUDA-major
 * ones only in `release_product` (`cudnn-v8-9-cuda-12`) and the archive name (`_cuda12-archive`):
 * those count only when what they say agrees, since a cuDNN built for another CUDA major loads
 * a libcublas that the toolkit does not have.
 */
export function cudnnBuildFor(manifest: Manifest, component: Component, platform: string, cudaMajor: number):
  {artifact: Artifact; major: number; style: CudnnChoice['style']} | {why: string} {
  const entry = component.platforms.get(platform);
  if (!entry) return {why: `no ${platform} build`};
  if (entry instanceof Map) {
    const artifact = entry.get(`cuda${cudaMajor}`);
    if (!artifact) return {why: `built for ${[...entry.keys()].map((v) => v.replace('cuda', 'CUDA ')).join(', ') || 'no CUDA'}`};
    const named = archiveMajor(artifact);
    if (named !== undefined && named !== cudaMajor) return {why: `its cuda${cudaMajor} entry is an archive for CUDA ${named}`};
    return {artifact, major: cudaMajor, style: 'variant'};
  }
  const fromProduct = /cuda-(\d+)$/.exec(manifest.product ?? '')?.[1];
  const majors = new Set([fromProduct === undefined ? undefined : Number(fromProduct), archiveMajor(entry)].filter((m) => m !== undefined));
  if (majors.size === 0) return {why: 'it does not say which CUDA it is built for'};
  if (majors.size > 1) return {why: `its release_product and archive name disagree on the CUDA major (${[...majors].join(' vs ')})`};
  const major = [...majors][0]!;
  if (major !== cudaMajor) return {why: `built for CUDA ${major}`};
  return {artifact: entry, major, style: 'per-major'};
}

/**
 * `--cudnn 9`: the newest cuDNN release matching the spec that has a build for this CUDA major
 * on the platform. NVIDIA publishes some releases twice (redistrib_8.9.7.json with variants,
 * redistrib_8.9.7.29.json for CUDA 12 alone): for one cuDNN version the manifest that names the
 * variant wins, since it says unambiguously what each archive is for.
 */
export async function chooseCudnn(mirror: Mirror, spec: string, cudaMajor: number, platform: string, signal?: AbortSignal): Promise<CudnnChoice> {
  checkRemoteSpec(spec, '--cudnn');
  const all = await listReleases(mirror, signal);
  // `--cudnn 8.9.7.29` also matches the variant manifest redistrib_8.9.7.json, whose cudnn is 8.9.7.29.
  const labels = all.filter((l) => spec === 'latest' || matchesPrefix(l, spec) || matchesPrefix(spec, l)).sort(compareLabels).reverse();
  const tried: string[] = [];
  let best: CudnnChoice | undefined;
  for (const label of labels.slice(0, 30)) {
    // Once one is found, only a manifest of the same cuDNN under a shorter label can still beat it.
    if (best && !matchesPrefix(best.version, label)) break;
    const manifest = await loadManifest(mirror, label, true, signal);
    if (!manifest) continue;
    const component = manifest.components.get('cudnn');
    if (!component) continue;
    const version = component.version || label;
    if (spec !== 'latest' && !matchesPrefix(version, spec) && !matchesPrefix(label, spec)) continue;
    const found = cudnnBuildFor(manifest, component, platform, cudaMajor);
    if ('why' in found) {
      tried.push(`${label} (${found.why})`);
      continue;
    }
    const choice: CudnnChoice = {label, component: 'cudnn', version, variant: `cuda${found.major}`, style: found.style, artifact: found.artifact, manifest};
    if (!best || (best.version === version && best.style === 'per-major' && choice.style === 'variant')) best = choice;
  }
  if (best) return best;
  throw new CudaenvError(`the cuDNN mirror ${mirror.display} has no cuDNN ${spec} built for CUDA ${cudaMajor} on ${platform}`, {
    hint: labels.length === 0 ? 'Its index lists no matching redistrib_*.json; check the cuDNN mirror (setting cudnnMirror, CUDAENV_CUDNN_MIRROR).'
      : `Releases looked at: ${tried.slice(0, 8).join(', ')}. Try another --cudnn spec.`,
    code: 'not-found',
  });
}
