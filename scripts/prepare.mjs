#!/usr/bin/env node
// npm's `prepare`: builds dist/ and oclif.manifest.json. npm runs it after `npm ci` in a clone,
// before `npm pack` and `npm publish`, and in the temporary clone of
// `npm install git+https://...`. When the clone's dependencies are missing there (npm/cli#8440),
// they are installed here, locally, from the lock file.
//
// `npm install -g git+URL` with npm up to 11.19 at least (npm/cli#4148, #6984, #8440; fixed by
// npm/pacote#494) goes, in pacote's GitFetcher and arborist's reify:
//   1. the outer install creates the empty PREFIX/lib/node_modules/cudaenv to extract into;
//   2. pacote clones the repository into a temporary directory and prepares it with an inner
//      `npm install --force` that inherits -g and --prefix from the environment: a global install
//      of a folder, so it replaces that directory with a link to the temporary clone, then runs
//      this script (link nodes run `prepare` before their bins are linked);
//   3. pacote packs the clone (running this script again) and the outer install extracts the
//      package into PREFIX/lib/node_modules/cudaenv: through the link, into the temporary clone,
//      which is deleted when the install ends. The install is left dangling.
// So, in step 2, once the clone is built, this script puts the directory of step 1 back in place
// of npm's link (only a link to this very clone, made under pacote's git preparation, which sets
// _PACOTE_NO_PREPARE_): step 3 then extracts into a real directory, and the outer install links
// the bins to it. The inner install's own bin links find no files there and are skipped.
// The dependencies are bundled (package.json's bundleDependencies) for this too: npm unpacks a
// package with bundled dependencies before any other (it must read the bundle to complete its
// tree), so nothing of step 1's directory is lost when the inner install replaces it; with
// separate dependencies npm would be extracting them into that directory at the same time.
import {spawnSync} from 'node:child_process';
import {existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, realpathSync, unlinkSync, writeFileSync} from 'node:fs';
import {dirname, join, resolve, sep} from 'node:path';
import {fileURLToPath} from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ['npm'];
// Written in pacote's temporary clone once it is built for a global git install, so that the
// packing run of step 3 does not build the same tree again. node_modules/ is never packed.
const builtForGitInstall = join(root, 'node_modules', '.cudaenv-built-for-git-install');

function run(args, env = process.env) {
  // Build output goes to stderr: stdout belongs to the npm command that runs prepare (`npm pack --json`).
  const r = spawnSync(args[0], args.slice(1), {cwd: root, stdio: ['inherit', 2, 2], env});
  if (r.status !== 0) {
    console.error(`cudaenv prepare: \`npm ${args.slice(npm.length).join(' ')}\` failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status || 1);
  }
}

const realpath = (path) => {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
};

/** npm's global link to this clone, when this run is step 2 above; undefined otherwise. */
function globalLinkToThisClone() {
  const prefix = process.env.npm_config_global_prefix || process.env.npm_config_prefix;
  if (process.env.npm_config_global !== 'true' || !process.env._PACOTE_NO_PREPARE_ || !prefix) return undefined;
  const link = join(prefix, 'lib', 'node_modules', pkg.name);
  try {
    if (!lstatSync(link).isSymbolicLink()) return undefined;
  } catch {
    return undefined;
  }
  return realpath(link) === realpath(root) ? {prefix, link} : undefined;
}

if (process.env.npm_config_global === 'true' && existsSync(builtForGitInstall)) {
  console.error('cudaenv prepare: already built in this temporary clone');
  process.exit(0);
}

const link = globalLinkToThisClone();
if (!existsSync(join(root, 'node_modules', '.bin', 'tsc'))) {
  // The outer `npm install -g --prefix P` hands its global and prefix settings down through the
  // environment: this install is local to the clone.
  const env = {...process.env, npm_config_global: 'false', npm_config_location: 'project'};
  delete env.npm_config_prefix;
  run([...npm, 'ci', '--include=dev', '--ignore-scripts', '--no-audit', '--no-fund'], env);
}
run([...npm, 'run', 'build']);

if (link) {
  // Bin links into the clone (none are made before this script runs, but an npm that made them
  // would leave them dangling too): the outer install makes its own.
  const clone = realpath(root);
  for (const name of Object.keys(pkg.bin ?? {})) {
    const bin = join(link.prefix, 'bin', name);
    try {
      if (!lstatSync(bin).isSymbolicLink()) continue;
      const target = resolve(dirname(bin), readlinkSync(bin));
      if ([link.link, root, clone].some((dir) => target === dir || target.startsWith(dir + sep))) unlinkSync(bin);
    } catch {
      // no such bin link
    }
  }
  try {
    unlinkSync(link.link);
    mkdirSync(link.link);
  } catch (e) {
    console.error(`cudaenv prepare: cannot replace npm's link ${link.link} (to its temporary clone) with a directory: ${e.message}. Install a package file instead: npm install -g "$(npm pack --silent GIT-URL)"`);
    process.exit(1);
  }
  writeFileSync(builtForGitInstall, `${new Date().toISOString()}\n`);
  console.error(`cudaenv prepare: built in npm's temporary clone; ${link.link} is a directory again, for npm to install the package into`);
}
