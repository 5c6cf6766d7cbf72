import {lstatSync, readFileSync, statSync} from 'node:fs';
import {dirname} from 'node:path';
import {CudaenvError} from '../errors.js';
import {quoteSh} from '../text/quote.js';
import type {StorePaths} from './paths.js';

/** The owner of the store, or of the nearest existing directory above it (where root would create it). */
function ownerUid(root: string): number | undefined {
  for (let dir = root; ; dir = dirname(dir)) {
    try {
      return statSync(dir).uid;
    } catch {
      if (dirname(dir) === dir) return undefined;
    }
  }
}

function uidOf(user: string): number | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (f[0] === user && /^\d+$/.test(f[2] ?? '')) return Number(f[2]);
    }
  } catch {
    // no passwd file: paths.ts then took root's own home, which is root's to write
  }
  return undefined;
}

function userName(uid: number): string | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (f[2] === String(uid) && f[0]) return f[0];
    }
  } catch {
    // no passwd file: the uid is named instead
  }
  return undefined;
}

/**
 * `sudo cudaenv install` writes into SUDO_USER's store (src/core/store/paths.ts), but every
 * directory and file it creates there (versions/, cache/, locks/, the resolve index) would be
 * root's: the user could then no longer install, uninstall or even take a lock. Installing
 * needs no root, so a root process refuses to change a store that belongs to someone else,
 * before it writes anything, and says how to run it instead.
 */
export function refuseForeignStore(paths: StorePaths, argv: string[], env: NodeJS.ProcessEnv = process.env): void {
  if (process.getuid?.() !== 0) return;
  // Under sudo without CUDAENV_DIR the store is SUDO_USER's (paths.ts), even before it exists: the
  // nearest directory above a store not made yet (/, or a home not created yet) is root's, and
  // root would create the user's store as its own.
  const sudoUser = env.SUDO_USER && env.SUDO_USER !== 'root' && !env.CUDAENV_DIR ? env.SUDO_USER : undefined;
  const sudoUid = sudoUser ? uidOf(sudoUser) : undefined;
  const owned = ownerUid(paths.root);
  const uid = owned !== undefined && owned !== 0 ? owned : sudoUid;
  if (uid === undefined || uid === 0) return;
  refuse('store', paths.root, uid, argv, env);
}

/**
 * `sudo cudaenv local` would leave a root-owned `.cuda-version` in the user's project: a root
 * process refuses to write a file in a directory, or over a file, that belongs to someone else,
 * in the words refuseForeignStore uses: `dir` is checked first, then `file` (where it exists).
 */
export function refuseForeignDirectory(dir: string, file: string, argv: string[], env: NodeJS.ProcessEnv = process.env): void {
  if (process.getuid?.() !== 0) return;
  for (const [kind, path] of [['directory', dir], ['file', file]] as const) {
    let uid: number;
    try {
      uid = lstatSync(path).uid;
    } catch {
      continue;
    }
    if (uid !== 0) refuse(kind, path, uid, argv, env);
  }
}

function refuse(kind: 'store' | 'directory' | 'file', path: string, uid: number, argv: string[], env: NodeJS.ProcessEnv): never {
  const name = userName(uid);
  const who = name ?? `uid ${uid}`;
  // sudo resets the environment: a CUDAENV_DIR in effect was given on its command line.
  const command = `${env.CUDAENV_DIR ? `CUDAENV_DIR=${quoteSh(env.CUDAENV_DIR)} ` : ''}${['cudaenv', ...argv].map(quoteSh).join(' ')}`;
  const viaSudo = env.SUDO_USER !== undefined && env.SUDO_USER === name;
  const where = kind === 'file' ? `over the file ${path}` : `in the ${kind} ${path}`;
  const what = kind === 'file' ? 'the file root writes in its place' : 'the files root creates there';
  throw new CudaenvError(`refusing to run \`cudaenv ${argv[0]}\` as root ${where}, which belongs to ${who}: ${what} could no longer be changed by ${who}`, {
    hint: viaSudo
      ? `Run it without sudo (it needs no root): ${command}`
      : `Run it as the ${kind}'s owner: ${name ? `sudo -u ${quoteSh(name)}` : `setpriv --reuid=${uid}`} ${command}`,
    code: kind === 'store' ? 'foreign-store' : 'foreign-directory',
  });
}
