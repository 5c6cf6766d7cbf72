import {existsSync} from 'node:fs';
import {isAbsolute, resolve} from 'node:path';
import {pathToFileURL} from 'node:url';
import {UsageError} from '../errors.js';
import {redactCredentials} from '../text/redact.js';

export const DEFAULT_CUDA_MIRROR = 'https://developer.download.nvidia.com/compute/cuda/redist/';
export const DEFAULT_CUDNN_MIRROR = 'https://developer.download.nvidia.com/compute/cudnn/redist/';

/** A redist tree: an http(s) base URL, or a directory (given as file:// or as a plain path). */
export type Mirror =
  | {kind: 'http'; base: string; display: string}
  | {kind: 'file'; base: string; dir: string; display: string};

/** A host name (with a dot, or localhost), an optional port, then a path: what a URL looks like without `https://`. */
const HOST_LIKE = /^(?:localhost|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)(?::\d+)?(?:\/.*)?$/;

/**
 * Normalises what a user wrote (`--mirror`, CUDAENV_MIRROR, the `mirror` setting) into a base
 * that relative paths from manifests are joined onto. Only http, https and file are accepted.
 */
export function parseMirror(text: string, source = '--mirror'): Mirror {
  const value = text.trim();
  if (value === '') throw new UsageError(`${source} is empty`, 'Give a URL such as https://developer.download.nvidia.com/compute/cuda/redist/ or a directory.');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new UsageError(`${source} ${JSON.stringify(value)} is not a valid URL`);
    }
    if (url.protocol === 'http:' || url.protocol === 'https:') {
      if (!url.pathname.endsWith('/')) url.pathname += '/';
      url.search = '';
      url.hash = '';
      return {kind: 'http', base: url.href, display: redactCredentials(url.href)};
    }
    if (url.protocol === 'file:') {
      const dir = decodeURIComponent(url.pathname).replace(/\/+$/, '') || '/';
      return {kind: 'file', base: pathToFileURL(`${dir}/`).href, dir, display: url.href};
    }
    throw new UsageError(`${source} ${JSON.stringify(value)} uses ${url.protocol.slice(0, -1)}, which cudaenv does not download from`, 'Use an http(s):// or file:// URL, or a directory path.');
  }
  const dir = isAbsolute(value) ? value : resolve(value);
  // `mirror.example.com/cuda/redist`: a URL without its scheme, which as a path names nothing.
  if (!existsSync(dir) && HOST_LIKE.test(value)) {
    throw new UsageError(`${source} ${JSON.stringify(value)} has no http:// or https:// and is no directory`,
      `Did you mean https://${value}? A mirror is an http(s):// URL, a file:// URL or a directory.`);
  }
  return {kind: 'file', base: pathToFileURL(`${dir.replace(/\/+$/, '')}/`).href, dir: dir.replace(/\/+$/, '') || '/', display: dir};
}

/**
 * A mirror as the settings file keeps it: checked when it is set (not at the next install),
 * and a directory made absolute, since a relative one would follow the cwd of every later command.
 */
export function mirrorSettingValue(text: string, key: string): string {
  const mirror = parseMirror(text, `the ${key} setting`);
  return mirror.kind === 'file' && !/^file:/i.test(text.trim()) ? mirror.dir : text.trim();
}

/** The mirror in effect: the flag, else the environment variable, else the setting, else NVIDIA. */
export function chooseMirror(options: {flag?: string; env?: string; setting?: string; fallback: string; envName: string; settingName: string}): Mirror {
  if (options.flag !== undefined) return parseMirror(options.flag, '--mirror');
  if (options.env) return parseMirror(options.env, options.envName);
  if (options.setting) return parseMirror(options.setting, `the setting ${options.settingName}`);
  return parseMirror(options.fallback);
}

/**
 * Checks a manifest's `relative_path` (untrusted): relative, no `..`, no empty or odd parts,
 * so it can never leave the mirror's tree, and never names a query or another host.
 */
export function checkRelativePath(rel: string, what: string): string {
  const bad = (why: string): never => {
    throw new UsageError(`the manifest gives ${what} the path ${JSON.stringify(rel)}, which ${why}`, 'The mirror is broken or hostile; use another mirror.');
  };
  if (typeof rel !== 'string' || rel === '') bad('is empty');
  if (rel.startsWith('/') || /^[a-z][a-z0-9+.-]*:/i.test(rel)) bad('is absolute');
  if (rel.length > 1024) bad('is too long');
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f-\x9f\\?#%]/.test(rel)) bad('holds characters a redist path never has');
  for (const part of rel.split('/')) {
    if (part === '..') bad('climbs out of the mirror with ..');
    if (part === '' || part === '.') bad('has an empty or "." part');
  }
  return rel;
}

/** The URL (or file path) of `rel` under the mirror. */
export function mirrorLocation(mirror: Mirror, rel: string): string {
  const encoded = rel.split('/').map(encodeURIComponent).join('/');
  return mirror.kind === 'http' ? new URL(encoded, mirror.base).href : `${mirror.dir === '/' ? '' : mirror.dir}/${rel}`;
}
