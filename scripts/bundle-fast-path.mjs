#!/usr/bin/env node
// Bundles the start-up fast path (src/start.ts: the last-resort handler and src/fast-path.ts with
// the core it reaches: `--version`, `current`, `use`, plain `check`) into one CommonJS file,
// dist/fast-path.bundle.cjs. Node 20 has no compile cache, and resolving and compiling some thirty
// ES modules was most of what `cudaenv use` cost with its check cached (issue 13: at most 2x
// `node -e 0`); CommonJS because bin/run.cjs then starts without Node's ES module loader (7 ms of
// a 41 ms `use`, bench/RESULTS.md). Packages stay imports from node_modules (none is on the fast
// path); bin/run.cjs falls back to dist/start.js when the bundle is missing.
import {build} from 'esbuild';
import {readFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// Files that find data relative to themselves: in the bundle they all sit in dist/.
const moved = [
  {file: /[\\/]src[\\/]core[\\/]shell[\\/](shims|shell)\.ts$/, from: '../../../shims/', to: '../shims/'},
  {file: /[\\/]src[\\/]core[\\/]versions[\\/]releases\.ts$/, from: "'./releases.json'", to: "'./core/versions/releases.json'"},
  // `init` names the launcher next to the package's dist/ (cliPath).
  {file: /[\\/]src[\\/]core[\\/]self[\\/]installation\.ts$/, from: "'../../../bin/cudaenv'", to: "'../bin/cudaenv'"},
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
  entryPoints: ['src/start.ts'],
  bundle: true,
  packages: 'external',
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile: join(root, 'dist', 'fast-path.bundle.cjs'),
  // CommonJS has no import.meta: the modules find their data through this file's own URL.
  define: {'import.meta.url': '__cudaenvBundleUrl'},
  banner: {js: 'const __cudaenvBundleUrl = require("node:url").pathToFileURL(__filename).href;'},
  logLevel: 'warning',
  plugins: [relocate],
});
