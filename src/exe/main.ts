/**
 * The entry of the single executable (`npm run build:exe`, scripts/build-exe.mjs): a Node.js
 * single executable application that carries every module of cudaenv and its dependencies,
 * bundled, and the package's data files. It does what bin/run.cjs does for the npm package: the
 * last-resort handler, the start-up fast path (`--version`, `current`, `use`, plain `check`),
 * then oclif, which finds the commands in the bundle (bundle.modules), not in dist/commands.
 */
import {join} from 'node:path';
import {setExeState} from '../core/self/installation.js';
import {writeFileSafely} from '../core/safe-fs/index.js';
import {storeRoot} from '../core/store/paths.js';
import {diskReadFileSync, installVfs, vfsPath} from './vfs.js';

export interface ExeBundle {
  buildId: string;
  /** package.json as oclif reads it. */
  pjson: {name: string; version: string; oclif: Record<string, unknown>} & Record<string, unknown>;
  /** The package's data files, by path relative to its root. */
  files: Readonly<Record<string, string>>;
  /** Loaders of the modules oclif loads by path (dist/commands/*.js, dist/hooks/*.js). */
  modules: Readonly<Record<string, () => Promise<unknown>>>;
}

/** Files the shells source by path (the start file `init` writes names them): written to disk by `init`. */
const SOURCED = /^shims\/shell\//;

export async function runExe(bundle: ExeBundle): Promise<void> {
  const root = join(storeRoot(), 'exe', bundle.buildId);
  setExeState({root, buildId: bundle.buildId, version: bundle.pjson.version, modules: bundle.modules});
  installVfs(root, bundle.files);
  const {installLastResort, fastPath} = await import('../start.js');
  installLastResort();
  let argv = process.argv.slice(2);
  // Before the fast path, which runs `init SHELL` too: the start file it writes names these files.
  if (argv[0] === 'init') writeSourcedFiles(root, bundle.files);
  if (await fastPath(argv)) return;
  if (argv[0] === 'exec') argv = (await import('../cli/exec-argv.js')).execArgv(argv);
  const {execute} = await import('@oclif/core');
  await execute({args: argv, loadOptions: {root, pjson: bundle.pjson, userPlugins: false}});
}

/**
 * The shell code the start file sources (shims/shell/*) as files under the executable's root in
 * the store, each rewritten only when it differs. Never fails `init`: where the store is read-only
 * (or under sudo, where they would belong to root), the start file is not written either and the
 * rc line falls back to `cudaenv init`, which prints the same code inline.
 */
export function writeSourcedFiles(root: string, files: Readonly<Record<string, string>>, env: NodeJS.ProcessEnv = process.env): void {
  if (process.getuid?.() === 0 && env.SUDO_USER && env.SUDO_USER !== 'root') return;
  for (const [file, text] of Object.entries(files)) {
    if (!SOURCED.test(file)) continue;
    const path = vfsPath(root, file);
    try {
      if (diskReadFileSync(path, 'utf8') === text) continue;
    } catch {
      // missing: write it
    }
    try {
      writeFileSafely(path, text);
    } catch {
      return;
    }
  }
}
