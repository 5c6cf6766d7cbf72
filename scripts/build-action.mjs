#!/usr/bin/env node
// Bundles the GitHub Action (src/action/main.ts and the core it uses, @actions/cache included)
// into one self-contained file, dist-action/index.mjs: an action runs from a checkout of its
// tag, without `npm install`. The output depends only on the sources, package-lock.json's
// versions and esbuild's version, so `--check` can compare the committed bundle byte for byte.
//
//   node scripts/build-action.mjs            write dist-action/index.mjs
//   node scripts/build-action.mjs --check    exit 1 if the committed bundle differs from a fresh build
import {build} from 'esbuild';
import {readFileSync, writeFileSync, mkdirSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'dist-action', 'index.mjs');

// src/core/shell/{shims,shell}.ts read shims/ relative to their own file (src/core/shell/ ->
// ../../../shims). In the bundle the reading file is dist-action/index.mjs, one level down
// from the repository root that the runner checks out: the same files are at ../shims.
const shimsPath = {
  name: 'shims-path',
  setup(b) {
    b.onLoad({filter: /[\\/]src[\\/]core[\\/]shell[\\/](shims|shell)\.ts$/}, (args) => {
      const text = readFileSync(args.path, 'utf8');
      const out = text.replaceAll('../../../shims/', '../shims/');
      if (out === text) throw new Error(`${args.path} no longer reads ../../../shims/: update scripts/build-action.mjs`);
      return {contents: out, loader: 'ts'};
    });
  },
};

// src/core/versions/releases.ts reads releases.json beside itself (install's profiles name the
// components no release has). The runner's checkout holds it at ../src/core/versions/ from
// dist-action/index.mjs.
const releasesPath = {
  name: 'releases-path',
  setup(b) {
    b.onLoad({filter: /[\\/]src[\\/]core[\\/]versions[\\/]releases\.ts$/}, (args) => {
      const text = readFileSync(args.path, 'utf8');
      const out = text.replaceAll("'./releases.json'", "'../src/core/versions/releases.json'");
      if (out === text) throw new Error(`${args.path} no longer reads './releases.json': update scripts/build-action.mjs`);
      return {contents: out, loader: 'ts'};
    });
  },
};

const result = await build({
  absWorkingDir: root,
  entryPoints: ['src/action/main.ts'],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  write: false,
  outfile,
  charset: 'utf8',
  legalComments: 'eof',
  logLevel: 'warning',
  plugins: [shimsPath, releasesPath],
  // Bundled CommonJS dependencies call require() for Node's modules; ESM has none.
  banner: {js: "import {createRequire as __cudaenvCreateRequire} from 'node:module';\nconst require = __cudaenvCreateRequire(import.meta.url);"},
});
const bytes = Buffer.from(result.outputFiles[0].contents);

if (process.argv.includes('--check')) {
  let committed;
  try {
    committed = readFileSync(outfile);
  } catch {
    committed = undefined;
  }
  if (!committed || !committed.equals(bytes)) {
    console.error(`dist-action/index.mjs is not what the sources build${committed ? '' : ' (it is missing)'}: run \`npm run build:action\` and commit dist-action/.`);
    process.exit(1);
  }
  console.log('dist-action/index.mjs matches the sources.');
} else {
  mkdirSync(dirname(outfile), {recursive: true});
  writeFileSync(outfile, bytes);
  console.log(`wrote dist-action/index.mjs (${bytes.length} bytes)`);
}
