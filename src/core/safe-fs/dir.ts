import {closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readlinkSync, statSync} from 'node:fs';
import {isAbsolute, join, resolve} from 'node:path';
import {CudaenvError, isErrno} from '../errors.js';
import {runningAsRoot, whyUntrusted} from './trust.js';

/**
 * A directory held open by its descriptor: every entry is reached as /proc/self/fd/N/NAME, which
 * the kernel resolves from the directory the descriptor holds (openat(2) semantics), so swapping a
 * path component for a link after the directory was checked changes nothing.
 */
export interface SafeDir {
  /** The path the caller named (for messages). */
  readonly path: string;
  readonly fd: number;
  /** The path through the descriptor of one entry of this directory (a plain name, no slash). */
  entry(name: string): string;
  close(): void;
}

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** As the kernel's own limit on links followed in one lookup (MAXSYMLINKS). */
const MAX_LINKS = 40;

let procFd: boolean | undefined;
/**
 * Whether /proc/self/fd reaches a directory through its descriptor. A container without /proc (rare)
 * gets paths instead: as root still safe, since every directory on them was found root's alone, and as
 * another user new files are still made with O_EXCL|O_NOFOLLOW.
 */
function viaProc(): boolean {
  if (procFd === undefined) {
    try {
      procFd = statSync('/proc/self/fd').isDirectory();
    } catch {
      procFd = false;
    }
  }
  return procFd;
}

/** An entry of the directory `fd` holds (real path `real`), through the descriptor where /proc allows. */
function entryOf(fd: number, real: string, name: string): string {
  return viaProc() ? `/proc/self/fd/${fd}/${name}` : join(real, name);
}

function holder(path: string, fd: number, real: string = path): SafeDir {
  let open = true;
  return {
    path,
    fd,
    entry(name: string): string {
      if (name === '' || name.includes('/') || name === '.' || name === '..') throw new Error(`not an entry name: ${JSON.stringify(name)}`);
      return entryOf(fd, real, name);
    },
    close(): void {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

function refuse(path: string, at: string, why: string, purpose: string | undefined): CudaenvError {
  return new CudaenvError(`refusing to ${purpose ?? `write ${path}`} as root: ${at} is not safe (${why}); another user could change what root finds there`, {
    hint: `Make ${at} and every directory above it owned by root and writable by no one else (chown root:root, chmod go-w), or run the command as the user who owns it.`,
    code: 'unsafe-path',
  });
}

export interface OpenDirOptions {
  /** Create missing directories (with this mode), as mkdir -p does. */
  create?: number;
  /** What root refuses to do when a directory is unsafe, for the message (default: write PATH). */
  purpose?: string;
}

/**
 * Opens `path` as a directory. As root it walks from / one component at a time: each directory is
 * opened with O_NOFOLLOW and must be root's and writable by nobody else (trust.ts); a link on the way
 * is followed only from a directory already found safe, since then only root could have made it.
 * As another user the directory is opened by its path (the user's own path is theirs to trust),
 * and what is written in it still goes through the descriptor with O_EXCL and O_NOFOLLOW.
 */
export function openDir(path: string, options: OpenDirOptions = {}): SafeDir {
  const absolute = resolve(path);
  if (!runningAsRoot()) return openAsUser(absolute, options);
  return walkAsRoot(absolute, options);
}

function openAsUser(path: string, options: OpenDirOptions): SafeDir {
  if (options.create !== undefined) mkdirSync(path, {recursive: true, mode: options.create});
  return holder(path, openSync(path, constants.O_RDONLY | constants.O_DIRECTORY));
}

function walkAsRoot(path: string, options: OpenDirOptions): SafeDir {
  let fd = openSync('/', DIR_FLAGS);
  let here = '/';
  const pending = path.split('/').filter((c) => c !== '' && c !== '.');
  let links = 0;
  try {
    const why0 = whyUntrusted(fstatSync(fd));
    if (why0) throw refuse(path, '/', why0, options.purpose);
    while (pending.length > 0) {
      const name = pending.shift()!;
      const at = entryOf(fd, here, name);
      let st;
      try {
        st = lstatSync(at);
      } catch (error) {
        if (!isErrno(error, 'ENOENT') || options.create === undefined) throw error;
        try {
          mkdirSync(at, {mode: options.create});
        } catch (mkdirError) {
          if (!isErrno(mkdirError, 'EEXIST')) throw mkdirError;
        }
        st = lstatSync(at);
      }
      const shown = name === '..' ? resolve(here, '..') : resolve(here, name);
      if (st.isSymbolicLink()) {
        // The link sits in a directory only root can change: it is root's to follow.
        if (++links > MAX_LINKS) throw new CudaenvError(`too many levels of symbolic links in ${path}`, {code: 'unsafe-path'});
        const value = readlinkSync(at);
        pending.unshift(...value.split('/').filter((c) => c !== '' && c !== '.'));
        if (isAbsolute(value)) {
          const root = openSync('/', DIR_FLAGS);
          closeSync(fd);
          fd = root;
          here = '/';
        }
        continue;
      }
      if (!st.isDirectory()) throw new CudaenvError(`cannot use ${path} as a directory: ${shown} is not a directory`, {hint: `Move ${shown} aside or choose another path.`, code: 'not-a-directory'});
      const next = openSync(at, DIR_FLAGS);
      closeSync(fd);
      fd = next;
      here = shown;
      const why = whyUntrusted(fstatSync(fd));
      if (why) throw refuse(path, here, why, options.purpose);
    }
    return holder(path, fd, here);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * An error of a call made through the descriptor names the path the user knows, never
 * /proc/self/fd/N/..., and the file meant, never its temporary name: `name` is that file.
 */
export function named(error: unknown, dir: SafeDir, name?: string): unknown {
  if (!isErrno(error)) return error;
  const proc = `/proc/self/fd/${dir.fd}`;
  const real = (text: string) => text.split(proc).join(dir.path.replace(/\/+$/, '') || '/');
  const shown = name === undefined ? undefined : `${dir.path.replace(/\/+$/, '')}/${name}`;
  const fix = (text: string) => (shown ? text.replace(new RegExp(`'${escape(proc)}/[^']*'`, 'g'), `'${shown}'`) : text);
  error.message = real(fix(error.message));
  if (typeof error.path === 'string') error.path = shown && error.path.startsWith(`${proc}/`) ? shown : real(error.path);
  else {
    // A write(2) or fsync(2) through the descriptor fails without a path (ENOSPC: "no space left
    // on device, write"): name the file meant, or the directory.
    error.path = shown ?? (dir.path.replace(/\/+$/, '') || '/');
    error.message = `${error.message} '${error.path}'`;
  }
  const withDest = error as {dest?: unknown};
  if (typeof withDest.dest === 'string') withDest.dest = shown ?? real(withDest.dest);
  return error;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Runs `use` with the directory open, and closes it whatever happens. */
export function withDir<T>(path: string, options: OpenDirOptions, use: (dir: SafeDir) => T): T {
  const dir = openDir(path, options);
  try {
    return use(dir);
  } catch (error) {
    throw named(error, dir);
  } finally {
    dir.close();
  }
}
