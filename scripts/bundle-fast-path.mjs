#!/usr/bin/env node
// Bundles the start-up fast path (src/fast-path.ts and the core it reaches: `--version`,
// `current`, `use`, plain `check`) into one file, dist/fast-path.bundle.js. Node 20 has no
// compile cache, and resolving and compiling some thirty ES modules was most of what `cudaenv use`
// cost with its check cached (issue 13: at most 2x `node -e 0`). Packages stay imports from
// node_modules; bin/run.js falls back to dist/fast-path.js when the bundle is missing.
import {build} from 'esbuild';
import {readFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// Files that find data relative to themselves: in the bundle they all sit in dist/.
const moved = [
  {file: /[\\/]src[\\/]core[\\/]shell[\\/](shims|shell)\.ts$/, from: '../../../shims/', to: '../shims/'},
  {file: /[\\/]src[\\/]core[\\/]versions[\\/]releases\.ts$/, from: "'./releases.json'", to: "'./core/versions/releases.json'"},
];
const relocate = {
  name: 'relocate-data',
  setup(b) {
    for (const m of moved) {
      b.onLoad({filter: m.file}, (args) => {
        const text = readFileSync(args.path, 'utf8');
        const out = text.replaceAll(m.from, m.to);
        if (out === text) throw new Error(`${args.path} no longer reads ${m.from}: update scripts/bundle-fast-path.mjs`);
        return {contents: out, loader: 'ts'};
      });
    }
  },
};

await build({
  absWorkingDir: root,
  entryPoints: ['src/fast-path.ts'],
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile: join(root, 'dist', 'fast-path.bundle.js'),
  logLevel: 'warning',
  plugins: [relocate],
});
