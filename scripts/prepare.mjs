#!/usr/bin/env node
// npm's `prepare`: builds dist/ and oclif.manifest.json. npm runs it after `npm ci` in a clone,
// before `npm pack` and `npm publish`, and in the temporary clone of
// `npm install git+https://...`. When the clone's dependencies are missing there (npm/cli#8440),
// they are installed here, locally, from the lock file.
//
// A *global* install from a git URL cannot work with npm up to 11.19 at least: npm prepares the
// clone with an inner `npm install` that inherits -g, links PREFIX/lib/node_modules/cudaenv to
// the temporary clone and deletes the clone afterwards (npm/cli#4148, #6984, #8440; fixed by
// npm/pacote#494). Rather than leave a dangling install, say so and name the way that works.
import {spawnSync} from 'node:child_process';
import {existsSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];

function run(args, env = process.env) {
  // Build output goes to stderr: stdout belongs to the npm command that runs prepare (`npm pack --json`).
  const r = spawnSync(args[0], args.slice(1), {cwd: root, stdio: ['inherit', 2, 2], env});
  if (r.status !== 0) {
    console.error(`cudaenv prepare: \`npm ${args.slice(npm.length).join(' ')}\` failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status || 1);
  }
}

if (process.env.npm_config_global === 'true') {
  console.error(`cudaenv: this npm cannot install cudaenv globally from a git URL (npm/cli#8440: it would leave a link to a deleted clone).
Pack it first, then install the package file:
  npm install -g "$(npm pack --silent git+https://github.com/OWNER/cudaenv.git)"
or from a clone: npm ci && npm install -g "$(npm pack --silent)"`);
  process.exit(1);
}

if (!existsSync(join(root, 'node_modules', '.bin', 'tsc'))) {
  // The outer `npm install -g --prefix P` hands its global and prefix settings down through the
  // environment: this install is local to the clone.
  const env = {...process.env, npm_config_global: 'false', npm_config_location: 'project'};
  delete env.npm_config_prefix;
  run([...npm, 'ci', '--include=dev', '--ignore-scripts', '--no-audit', '--no-fund'], env);
}
run([...npm, 'run', 'build']);
