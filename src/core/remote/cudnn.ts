import {CudaenvError} from '../errors.js';
import {listReleases, loadManifest, checkRemoteSpec} from './catalog.js';
import {compareLabels, matchesPrefix} from './labels.js';
import {artifactFor, type Artifact, type Manifest} from './manifest.js';
import type {Mirror} from './mirror.js';

export interface CudnnChoice {
  label: string;
  component: string;
  version: string;
  variant: string;
  artifact: Artifact;
  manifest: Manifest;
}

/**
 * `--cudnn 9`: the newest cuDNN release matching the spec that has a build for this CUDA
 * major (`cuda12` variant) on the platform. Older cuDNN manifests without variants count
 * only when their archive name says which CUDA it was built for.
 */
export async function chooseCudnn(mirror: Mirror, spec: string, cudaMajor: number, platform: string, signal?: AbortSignal): Promise<CudnnChoice> {
  checkRemoteSpec(spec, '--cudnn');
  const labels = (await listReleases(mirror, signal)).filter((l) => spec === 'latest' || matchesPrefix(l, spec)).sort(compareLabels).reverse();
  const variant = `cuda${cudaMajor}`;
  const tried: string[] = [];
  for (const label of labels.slice(0, 30)) {
    const manifest = await loadManifest(mirror, label, true, signal);
    if (!manifest) continue;
    const component = manifest.components.get('cudnn');
    if (!component) continue;
    let artifact = artifactFor(component, platform, variant);
    if (!artifact) {
      const plain = artifactFor(component, platform);
      if (plain && plain.relativePath.includes(`_${variant}-`)) artifact = plain;
    }
    if (artifact) return {label, component: 'cudnn', version: component.version || label, variant, artifact, manifest};
    tried.push(label);
  }
  throw new CudaenvError(`the cuDNN mirror ${mirror.display} has no cuDNN ${spec} built for CUDA ${cudaMajor} on ${platform}`, {
    hint: labels.length === 0 ? 'Its index lists no matching redistrib_*.json; check the cuDNN mirror (setting cudnnMirror, CUDAENV_CUDNN_MIRROR).'
      : `Releases looked at: ${tried.slice(0, 8).join(', ')}. Try another --cudnn spec.`,
    code: 'not-found',
  });
}
