import {realManifestText} from './real-mirror.js';

/**
 * NVIDIA's real redistrib_13.0.2.json reshaped as the releases after it ship theirs: a new
 * label and date, CCCL under `cccl` instead of `cuda_cccl` (as from 13.2), component versions
 * of the new release, components it adds (unknown to cudaenv) or lacks. Every other entry,
 * field and platform stays as NVIDIA wrote it; relative paths follow a renamed key or a new
 * version as NVIDIA names archives (`<key>/<platform>/<key>-<platform>-<version>-archive.tar.xz`).
 */
export interface Reshape {
  label: string;
  date?: string;
  /** 'cccl' (the default, as 13.2 on), 'cuda_cccl' (as before) or 'none' (a release without CCCL). */
  cccl?: 'cccl' | 'cuda_cccl' | 'none';
  /** New versions of components (by their key in the result). */
  versions?: Record<string, string>;
  /** Components the release adds, shaped like cuda_culibos. */
  extra?: string[];
  /** Components the release lacks. */
  drop?: string[];
}

type Entry = Record<string, unknown>;

function renameEntry(entry: Entry, from: string, to: string): Entry {
  return JSON.parse(JSON.stringify(entry).replaceAll(`"${from}/`, `"${to}/`).replaceAll(`/${from}-`, `/${to}-`)) as Entry;
}

function reversion(entry: Entry, version: string): Entry {
  const old = entry.version as string;
  const out = JSON.parse(JSON.stringify(entry).replaceAll(`-${old}-archive`, `-${version}-archive`)) as Entry;
  out.version = version;
  return out;
}

export function laterManifestText(r: Reshape): string {
  const real = JSON.parse(realManifestText('cuda', '13.0.2')) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(real)) {
    if (key === 'release_label') out[key] = r.label;
    else if (key === 'release_date') out[key] = r.date ?? '2026-09-09';
    else if (key === 'cuda_cccl') {
      const cccl = r.cccl ?? 'cccl';
      if (cccl !== 'none') out[cccl] = cccl === 'cccl' ? renameEntry(value as Entry, 'cuda_cccl', 'cccl') : value;
    } else if (!(r.drop ?? []).includes(key)) out[key] = value;
  }
  for (const name of r.extra ?? []) {
    const shape = renameEntry(real.cuda_culibos as Entry, 'cuda_culibos', name);
    out[name] = {...shape, name: `${name} (added after 13.0)`, license_path: `${name}/LICENSE.txt`};
  }
  for (const [key, version] of Object.entries(r.versions ?? {})) {
    if (!(key in out)) throw new Error(`the reshaped manifest has no ${key}`);
    out[key] = reversion(out[key] as Entry, version);
  }
  return `${JSON.stringify(out, null, 4)}\n`;
}
