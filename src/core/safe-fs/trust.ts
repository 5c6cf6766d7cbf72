import type {Stats} from 'node:fs';

/** Is this process root? Root must never follow a path another user controls. */
export function runningAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * Can nobody but root change what is in this directory? Owned by root, writable by no other user
 * (a group other than root's counts as other users, as sshd's StrictModes and ld.so's secure
 * directories take it). A sticky directory of root's (/tmp) passes: there only an entry's owner
 * may rename or remove it, so an entry root made stays root's (unless `strict`).
 */
export function whyUntrusted(st: Stats, options: {strict?: boolean} = {}): string | undefined {
  if (st.uid !== 0) return `it is owned by uid ${st.uid}, not root`;
  if (st.isSymbolicLink()) return undefined; // a link's mode means nothing; its directory decides
  // strict: what is in the directory matters too (a toolkit's lib64), not only who may replace entries.
  const sticky = (st.mode & 0o1000) !== 0 && !options.strict;
  if ((st.mode & 0o002) !== 0 && !(st.isDirectory() && sticky)) return 'it is writable by every user';
  if ((st.mode & 0o020) !== 0 && st.gid !== 0 && !(st.isDirectory() && sticky)) return `it is writable by group ${st.gid}`;
  return undefined;
}

/** The mode bits as `ls -l` users read them in messages (0755). */
export function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8)}`;
}
