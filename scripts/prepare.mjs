#!/usr/bin/env node
// npm's `prepare`: builds dist/ and oclif.manifest.json. npm runs it after `npm ci` in a clone,
// before `npm pack` and `npm publish`, and in the temporary clone of
// `npm install -g git+https://...`. In that last case npm (up to 11 at least, npm/cli#8440) does
// not install the clone's dependencies first when the install is global, so the build tools are
// missing: install them here, locally, from the lock file, then build.
import {spawnSync} from 'node:child_process';
import {existsSync, lstatSync, realpathSync, unlinkSync} from 'node:fs';
import {dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];

function run(args, env = process.env) {
  const r = spawnSync(args[0], args.slice(1), {cwd: root, stdio: 'inherit', env});
  if (r.status !== 0) {
    console.error(`cudaenv prepare: \`npm ${args.slice(npm.length).join(' ')}\` failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status || 1);
  }
}

if (!existsSync(join(root, 'node_modules', '.bin', 'tsc'))) {
  // The outer `npm install -g --prefix P` hands its global and prefix settings down through the
  // environment: this install is local to the clone.
  const env = {...process.env, npm_config_global: 'false', npm_config_location: 'project'};
  delete env.npm_config_prefix;
  run([...npm, 'ci', '--include=dev', '--ignore-scripts', '--no-audit', '--no-fund'], env);
}
run([...npm, 'run', 'build']);

// The same npm bug makes that inner install a global one: it links PREFIX/lib/node_modules/cudaenv
// to this temporary clone, which npm deletes afterwards, and the outer install then unpacks
// the package through that link into the deleted clone (a dangling install). Remove the link: the
// outer install puts a real directory there.
if (process.env.npm_config_global === 'true' && process.env.npm_config_prefix) {
  const link = join(process.env.npm_config_prefix, 'lib', 'node_modules', 'cudaenv');
  try {
    if (lstatSync(link).isSymbolicLink() && realpathSync(link) === realpathSync(root)) unlinkSync(link);
  } catch {
    // No link: nothing to undo.
  }
}
