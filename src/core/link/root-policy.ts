import {lstatSync, readdirSync, realpathSync} from 'node:fs';
import {join, relative, resolve, sep} from 'node:path';
import {CudaenvError} from '../errors.js';
import {octal, runningAsRoot, whyUntrusted, withDir} from '../safe-fs/index.js';
import {quoteSh} from '../text/quote.js';

/**
 * What root may link (docs/security.md). `/usr/local/cuda` is read by every user and service, and
 * ld.so.conf.d files name its lib64: a toolkit that another user can change would let that user put
 * a library (libz.so.1) into every program, setuid ones included. So as root, a toolkit and every
 * directory above it must be root's and writable by no one else, as sshd's StrictModes and ld.so's
 * secure directories require, and so must everything in it.
 */

/** A toolkit has a few thousand entries; a tree past this is not walked and not linked. */
const MAX_ENTRIES = 500_000;

export function rootOwnedToolkitHint(label: string): string {
  return `Install it into a store of root's and link it from there: sudo CUDAENV_DIR=/opt/cudaenv cudaenv install ${quoteSh(label)} && ` +
    `sudo CUDAENV_DIR=/opt/cudaenv cudaenv link ${quoteSh(label)} (or link a toolkit a system package installed: cudaenv add /usr/local/cuda-X.Y).`;
}

function refuse(label: string, dir: string, at: string, why: string): CudaenvError {
  return new CudaenvError(`refusing to link CUDA ${label} as root: ${dir} is not root's alone (${at}: ${why}); every program on this machine would load libraries that another user can change`, {
    hint: rootOwnedToolkitHint(label),
    code: 'toolkit-not-root-owned',
  });
}

/** Throws unless `dir` is a directory that only root can change, down to its last file. */
export function requireRootOwnedToolkit(dir: string, label: string): void {
  if (!runningAsRoot()) return;
  let real: string;
  try {
    real = realpathSync(dir);
  } catch (error) {
    throw new CudaenvError(`cannot link CUDA ${label}: ${dir} cannot be resolved (${(error as Error).message})`, {hint: `Register it again (cudaenv add DIR --as ${label}) or pick another version.`, code: 'not-installed'});
  }
  if (!lstatSync(real).isDirectory()) {
    throw new CudaenvError(`cannot link CUDA ${label}: ${dir} is not a directory`, {hint: `A version is a toolkit's directory: remove the store's entry (cudaenv uninstall ${quoteSh(label)}) and add the toolkit's directory.`, code: 'not-a-toolkit'});
  }
  // The path as written and as resolved: each directory on the way, links included, must be root's.
  for (const path of new Set([dir, real])) {
    try {
      withDir(path, {purpose: `link ${path}`}, () => undefined);
    } catch (error) {
      if (error instanceof CudaenvError && error.code === 'unsafe-path') {
        const m = /: (\/[^ ]*|\/) is not safe \(([^)]*)\)/.exec(error.message);
        throw refuse(label, dir, m?.[1] ?? path, m?.[2] ?? error.message);
      }
      throw error;
    }
  }
  walkTree(real, label, dir, new Set([real]));
}

function inside(root: string, path: string): boolean {
  const r = relative(root, path);
  return r === '' || (!r.startsWith('..') && !r.startsWith(sep) && r !== '..');
}

function walkTree(root: string, label: string, shown: string, seen: Set<string>): void {
  const stack = [root];
  let count = 0;
  while (stack.length > 0) {
    const dir = stack.pop()!;
    const own = lstatSync(dir);
    const why = whyUntrusted(own, {strict: true});
    if (why) throw refuse(label, shown, dir, `${why}, mode ${octal(own.mode)}`);
    for (const name of readdirSync(dir)) {
      if (++count > MAX_ENTRIES) throw refuse(label, shown, root, `more than ${MAX_ENTRIES} entries, not checked`);
      const path = join(dir, name);
      const st = lstatSync(path);
      if (st.isDirectory()) {
        stack.push(path);
        continue;
      }
      const bad = whyUntrusted(st, {strict: true});
      if (bad) throw refuse(label, shown, path, `${bad}, mode ${octal(st.mode)}`);
      if (st.isSymbolicLink()) {
        let target: string;
        try {
          target = realpathSync(path);
        } catch {
          continue; // dangling: it loads nothing
        }
        if (inside(root, target) || seen.has(target)) continue;
        seen.add(target);
        // A link out of the tree (lib64 -> /usr/lib/x86_64-linux-gnu) brings what it names: that must be root's too.
        try {
          withDir(lstatSync(target).isDirectory() ? target : resolve(target, '..'), {purpose: `link ${target}`}, () => undefined);
        } catch (error) {
          if (error instanceof CudaenvError && error.code === 'unsafe-path') throw refuse(label, shown, `${path} -> ${target}`, 'it leads where another user can write');
          throw error;
        }
        const tst = lstatSync(target);
        const tw = whyUntrusted(tst, {strict: true});
        if (tw) throw refuse(label, shown, `${path} -> ${target}`, tw);
        if (tst.isDirectory()) walkTree(target, label, shown, seen);
      }
    }
  }
}

/** Where root may make or move a link: what a sudoers rule `cudaenv link *` can reach. */
export const DEFAULT_LINK_PREFIXES = ['/usr/local', '/opt'];
/** Never, whatever CUDAENV_LINK_PREFIXES says: a link there is configuration of the whole system. */
const SYSTEM_DIRS = ['/etc', '/boot', '/dev', '/proc', '/sys', '/run', '/var', '/root', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/usr/bin', '/usr/sbin', '/usr/lib', '/usr/lib32', '/usr/lib64', '/usr/libexec', '/usr/share', '/usr/include', '/usr/local/bin', '/usr/local/sbin', '/usr/local/lib', '/usr/local/etc'];

/**
 * CUDAENV_LINK_PREFIXES (root's own environment: sudo's env_reset drops it) names the directories
 * whose links an administrator lets cudaenv manage: there a link cudaenv did not make may be replaced
 * (and is restored by unlink), as /usr/local/cuda always may.
 */
function explicitPrefixes(env: NodeJS.ProcessEnv): string[] | undefined {
  return env.CUDAENV_LINK_PREFIXES ? env.CUDAENV_LINK_PREFIXES.split(':').filter((p) => p.startsWith('/')).map((p) => resolve(p)) : undefined;
}

export function linkPrefixes(env: NodeJS.ProcessEnv = process.env): string[] {
  return explicitPrefixes(env) ?? DEFAULT_LINK_PREFIXES;
}

/**
 * As root, `--target` is a link under /usr/local or /opt (CUDAENV_LINK_PREFIXES, which sudo's
 * env_reset drops), never in a system directory; and a target other than /usr/local/cuda is one
 * cudaenv manages already (`managed`: recorded, or an alternatives link) or nothing at all.
 */
export function requireRootTarget(target: string, state: 'absent' | 'symlink', managed: boolean, env: NodeJS.ProcessEnv = process.env): void {
  if (!runningAsRoot()) return;
  const prefixes = linkPrefixes(env);
  const system = SYSTEM_DIRS.find((d) => inside(d, target));
  const allowed = prefixes.some((p) => p !== '/' && inside(p, target) && target !== p);
  if (system || !allowed) {
    throw new CudaenvError(`refusing to link ${target} as root: ${system ? `it is in ${system}, the system's own configuration` : `it is not under ${prefixes.join(' or ')}`}`, {
      hint: `As root, cudaenv links only paths under ${prefixes.join(' or ')} (such as /usr/local/cuda), so that a sudo rule for \`cudaenv link\` cannot change the system's files.`,
      code: 'target-not-allowed',
    });
  }
  if (target === '/usr/local/cuda' || state === 'absent' || managed || explicitPrefixes(env) !== undefined) return;
  throw new CudaenvError(`refusing to replace ${target} as root: it is a link cudaenv did not make`, {
    hint: `Remove it yourself if it should go (sudo rm ${quoteSh(target)}), then link again; cudaenv manages /usr/local/cuda and the links it created.`,
    code: 'target-not-managed',
  });
}
