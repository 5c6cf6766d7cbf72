import {spawnSync, type SpawnSyncReturns} from 'node:child_process';
import {existsSync} from 'node:fs';
import {arch} from 'node:os';
import {join} from 'node:path';
import {REPO_ROOT} from '../helpers/cli.js';
import {CAN_MOUNT_NAMESPACE, IS_ROOT} from '../helpers/capabilities.js';

/** What `npm run build:exe` writes (scripts/build-exe.mjs). */
export const DIST_EXE = join(REPO_ROOT, 'dist-exe');
export const HOST_ARCH = arch() === 'arm64' ? 'arm64' : 'x64';
export const EXE = join(DIST_EXE, `cudaenv-linux-${HOST_ARCH}`);
export const HAVE_EXE = existsSync(EXE);
export const NEEDS_EXE = `needs the single executable: run \`npm run build:exe\` (${EXE} is missing)`;
export const WITHOUT_NODE = join(REPO_ROOT, 'test', 'exe', 'without-node.sh');
/** Hiding node needs root and mount namespaces (overlay mounts in a namespace of the test's own). */
export const CAN_HIDE_NODE = IS_ROOT && CAN_MOUNT_NAMESPACE;
export const NEEDS_HIDE_NODE = 'needs root and mount namespaces to hide node (test/exe/without-node.sh)';

/** A clean environment for the executable: PATH of the system's directories and BIN, HOME and the store of the test's own. */
export function exeEnv(home: string, store: string, bin: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {PATH: `${bin}:/usr/bin:/bin`, HOME: home, CUDAENV_DIR: store, LANG: 'C.UTF-8', TERM: 'dumb', NO_COLOR: '1', ...extra};
}

/** Runs the bash SCRIPT with node hidden from it (test/exe/without-node.sh). */
export function bashWithoutNode(script: string, env: NodeJS.ProcessEnv, cwd?: string): SpawnSyncReturns<string> {
  return spawnSync(WITHOUT_NODE, ['bash', '-c', script], {env, cwd, encoding: 'utf8', timeout: 120_000});
}
