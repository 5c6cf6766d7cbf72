import {lstatSync} from 'node:fs';

/**
 * An absolute form of a checked path that names the same file as the kernel's lookup would (issue
 * 12 item 3); the loader model's own names keep ld.so's text (search/loader-process.ts). Textual normalisation (path.resolve) is wrong for `..` after a symlinked directory:
 * the kernel follows `lnsub` first, so `lnsub/../x` is x beside lnsub's *target*. Empty and `.`
 * components are dropped and `..` folded only where the prefix is not a symlink; from the first
 * `..` that must stay the rest is kept as written (ld.so keeps such a name as it is too).
 * `cwd` is a real directory (getcwd), so a leading `..` folds against it, as dl-object.c does.
 */
export function kernelPath(path: string, cwd: string): string {
  const full = path.startsWith('/') ? path : `${cwd}/${path}`;
  const parts = full.split('/');
  const out: string[] = [];
  let raw = false;
  for (const part of parts) {
    if (raw) {
      out.push(part);
      continue;
    }
    if (part === '' || part === '.') continue;
    if (part !== '..') {
      out.push(part);
      continue;
    }
    if (out.length === 0) continue; // /.. is /
    let link = false;
    try {
      link = lstatSync(`/${out.join('/')}`).isSymbolicLink();
    } catch {
      // a missing prefix: the kernel fails on it either way; fold it
    }
    if (link) {
      out.push('..');
      raw = true;
    } else {
      out.pop();
    }
  }
  return `/${out.join('/')}`;
}
