#!/usr/bin/env node
// Writes src/core/versions/releases.json: for every CUDA release, the version of each toolkit
// component NVIDIA ships in it, read from NVIDIA's redistrib_X.Y.Z.json manifests. cudaenv names a
// toolkit it did not install (a runfile install, a pip-assembled tree) by matching the component
// versions it finds there against this table: nvcc's or cudart's own version is not the release.
//
//   node scripts/gen-release-table.mjs [MANIFEST_DIR] [OUT]
//   (defaults: ../shared/redist-manifests/cuda and src/core/versions/releases.json)
//
// Manifests of 11.4.2 to 12.1.1 carry no release_label: the label comes from the file name then.
import {readFileSync, readdirSync, writeFileSync} from 'node:fs';
import {basename, dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifestDir = process.argv[2] ?? join(root, '..', 'shared', 'redist-manifests', 'cuda');
const out = process.argv[3] ?? join(root, 'src', 'core', 'versions', 'releases.json');

// Entries in every manifest that are not parts of a toolkit (drivers, fabric manager, firmware tools).
const NOT_TOOLKIT = /^(nvidia_driver|fabricmanager|imex|mft.*|nvlsm|libnvidia_nscq|libnvsdm|driver_assistant|collectx_bringup|nvidia_fs)$/;
const LABEL = /^\d+\.\d+\.\d+$/;

function byVersion(a, b) {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

const releases = {};
for (const name of readdirSync(manifestDir)) {
  const m = /^redistrib_(\d+\.\d+\.\d+)\.json$/.exec(name);
  if (!m) continue;
  const manifest = JSON.parse(readFileSync(join(manifestDir, name), 'utf8'));
  const label = typeof manifest.release_label === 'string' ? manifest.release_label : m[1];
  if (!LABEL.test(label)) throw new Error(`${name}: release label ${JSON.stringify(label)} is not MAJOR.MINOR.PATCH`);
  if (label !== m[1]) throw new Error(`${name}: release_label ${label} disagrees with the file name`);
  const components = {};
  for (const key of Object.keys(manifest).sort()) {
    const entry = manifest[key];
    if (NOT_TOOLKIT.test(key) || typeof entry !== 'object' || entry === null || typeof entry.version !== 'string') continue;
    components[key] = entry.version;
  }
  releases[label] = components;
}
const labels = Object.keys(releases).sort(byVersion);
if (labels.length === 0) throw new Error(`no redistrib_X.Y.Z.json in ${manifestDir}`);

// One release per line: a new release is a one-line diff.
const lines = labels.map((l) => `    ${JSON.stringify(l)}: ${JSON.stringify(releases[l])}`);
const text = `{\n  "source": "NVIDIA redistrib_X.Y.Z.json manifests ${labels[0]} to ${labels.at(-1)}; regenerate with node scripts/gen-release-table.mjs",\n  "releases": {\n${lines.join(',\n')}\n  }\n}\n`;
writeFileSync(out, text);
console.log(`${basename(out)}: ${labels.length} releases (${labels[0]} to ${labels.at(-1)})`);
