#!/usr/bin/env node
// Writes src/core/versions/releases.json: for every CUDA release, the version of each toolkit
// component NVIDIA ships in it, read from NVIDIA's redistrib_X.Y.Z.json manifests. cudaenv names a
// toolkit it did not install (a runfile install, a pip-assembled tree) by matching the component
// versions it finds there against this table: nvcc's or cudart's own version is not the release.
//
//   node scripts/gen-release-table.mjs [MANIFEST_DIR] [OUT]
//   (defaults: test/fixtures/redist-manifests/cuda, NVIDIA's manifests kept in the repository, and src/core/versions/releases.json)
//   node scripts/gen-release-table.mjs --mirror URL|DIR [OUT]
//   (keeps every release OUT has and adds, or replaces, each release the mirror's index lists:
//    https://developer.download.nvidia.com/compute/cuda/redist/ for NVIDIA's newest; a partial
//    mirror never shrinks the table)
//
// Manifests of 11.4.2 to 12.1.1 carry no release_label: the label comes from the file name then.
// Manifests are data: only their keys and version strings are read.
import {readFileSync, readdirSync, writeFileSync, existsSync} from 'node:fs';
import {get as httpGet} from 'node:http';
import {get as httpsGet} from 'node:https';
import {basename, dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const mirrorAt = args.indexOf('--mirror');
const mirror = mirrorAt >= 0 ? args[mirrorAt + 1] : undefined;
if (mirrorAt >= 0 && !mirror) fail('--mirror needs a URL or a directory (e.g. https://developer.download.nvidia.com/compute/cuda/redist/)');
const rest = mirrorAt >= 0 ? args.filter((_, i) => i !== mirrorAt && i !== mirrorAt + 1) : args;
const manifestDir = mirror ? undefined : rest[0] ?? join(root, 'test', 'fixtures', 'redist-manifests', 'cuda');
const out = (mirror ? rest[0] : rest[1]) ?? join(root, 'src', 'core', 'versions', 'releases.json');

// Entries in every manifest that are not parts of a toolkit (drivers, fabric manager, firmware tools).
const NOT_TOOLKIT = /^(nvidia_driver|fabricmanager|imex|mft.*|nvlsm|libnvidia_nscq|libnvsdm|driver_assistant|collectx_bringup|nvidia_fs)$/;
const LABEL = /^\d+\.\d+\.\d+$/;
const FILE = /^redistrib_(\d+\.\d+\.\d+)\.json$/;

function fail(message) {
  console.error(`gen-release-table: ${message}`);
  process.exit(1);
}

function byVersion(a, b) {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The label and the toolkit components' versions of one manifest's text. */
function row(name, fileLabel, text) {
  let manifest;
  try {
    manifest = JSON.parse(text);
  } catch (error) {
    throw new Error(`${name} is not JSON (${error.message}): is the mirror right?`);
  }
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) throw new Error(`${name}: the top level is not an object`);
  const label = typeof manifest.release_label === 'string' ? manifest.release_label : fileLabel;
  if (!LABEL.test(label)) throw new Error(`${name}: release label ${JSON.stringify(label)} is not MAJOR.MINOR.PATCH`);
  if (label !== fileLabel) throw new Error(`${name}: release_label ${label} disagrees with the file name`);
  const components = {};
  for (const key of Object.keys(manifest).sort()) {
    const entry = manifest[key];
    if (NOT_TOOLKIT.test(key) || typeof entry !== 'object' || entry === null || typeof entry.version !== 'string') continue;
    components[key] = entry.version;
  }
  return [label, components];
}

/** GET over http(s), following up to 5 redirects; the body as text. */
function fetchText(url, redirects = 5) {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith('https:') ? httpsGet : httpGet)(url, {timeout: 60000}, (res) => {
      if ([301, 302, 303, 307, 308].includes(res.statusCode) && res.headers.location && redirects > 0) {
        res.resume();
        resolve(fetchText(new URL(res.headers.location, url).href, redirects - 1));
        return;
      }
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`${shown(url)} answered HTTP ${res.statusCode}`));
        return;
      }
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${shown(url)}: no answer in 60 s`)));
    req.on('error', (error) => reject(new Error(`${shown(url)}: ${error.message}`)));
  });
}

/** A URL as messages and the table may show it: credentials out. */
function shown(url) {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.href;
  } catch {
    return url;
  }
}

/** The releases a mirror serves: [label, components] for each redistrib_X.Y.Z.json its index lists. */
async function fromMirror(where) {
  if (!/^https?:\/\//.test(where)) {
    const dir = where.startsWith('file://') ? fileURLToPath(where) : where;
    if (!existsSync(dir)) throw new Error(`the mirror ${where} is neither an http(s) URL nor a directory`);
    const rows = fromDir(dir);
    if (rows.length === 0) throw new Error(`the mirror ${where} holds no redistrib_X.Y.Z.json: is it the cuda/redist/ folder?`);
    return rows;
  }
  const base = where.endsWith('/') ? where : `${where}/`;
  const index = await fetchText(base);
  const files = [...new Set([...index.matchAll(/href\s*=\s*["']?(?:[^"'>\s]*\/)?(redistrib_\d+\.\d+\.\d+\.json)["'>\s]/gi)].map((m) => m[1]))];
  if (files.length === 0) throw new Error(`the index page of ${shown(base)} lists no redistrib_X.Y.Z.json: is it the cuda/redist/ folder?`);
  const rows = [];
  for (let i = 0; i < files.length; i += 6) {
    const batch = files.slice(i, i + 6);
    rows.push(...await Promise.all(batch.map(async (f) => row(`${shown(base)}${f}`, FILE.exec(f)[1], await fetchText(`${base}${f}`)))));
  }
  return rows;
}

function fromDir(dir) {
  return readdirSync(dir).filter((f) => FILE.test(f)).map((f) => row(f, FILE.exec(f)[1], readFileSync(join(dir, f), 'utf8')));
}

async function main() {
  const releases = {};
  let added = [];
  if (mirror) {
    // Keep what the table has: a mirror that holds only some releases must not drop the others.
    if (existsSync(out)) Object.assign(releases, JSON.parse(readFileSync(out, 'utf8')).releases);
    for (const [label, components] of await fromMirror(mirror)) {
      if (!(label in releases) || JSON.stringify(releases[label]) !== JSON.stringify(components)) added.push(label);
      releases[label] = components;
    }
    added = added.sort(byVersion);
  } else {
    for (const [label, components] of fromDir(manifestDir)) releases[label] = components;
  }
  const labels = Object.keys(releases).sort(byVersion);
  if (labels.length === 0) throw new Error(`no redistrib_X.Y.Z.json in ${mirror ?? manifestDir}`);

  // One release per line: a new release is a one-line diff.
  const lines = labels.map((l) => `    ${JSON.stringify(l)}: ${JSON.stringify(releases[l])}`);
  const how = mirror ? ' --mirror URL' : '';
  const text = `{\n  "source": "NVIDIA redistrib_X.Y.Z.json manifests ${labels[0]} to ${labels.at(-1)}; regenerate with node scripts/gen-release-table.mjs${how}",\n  "releases": {\n${lines.join(',\n')}\n  }\n}\n`;
  writeFileSync(out, text);
  const news = mirror ? `; from ${shown(mirror)}: ${added.length === 0 ? 'nothing new' : `${added.length} new or changed (${added.join(', ')})`}` : '';
  console.log(`${basename(out)}: ${labels.length} releases (${labels[0]} to ${labels.at(-1)})${news}`);
}

main().catch((error) => fail(error.message));
