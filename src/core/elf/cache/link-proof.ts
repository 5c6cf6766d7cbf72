import {identity, statOrNull, type InputKind} from './inputs.js';
import {realpathInNow, rememberRealpathsIn} from '../read/machine/sysroot.js';

/**
 * The 'h' facts of a store (paths of a system image, each resolved in the image: sysroot.ts
 * realpathIn) told at once. A resolution reads only the entries of the directories it passes
 * through, and an entry cannot change without changing its directory's mtime (a link's target
 * cannot be rewritten in place; adding, removing, renaming or replacing an entry writes the
 * directory): while every such directory reads the same, every answer is the same. A cached check
 * of the PyTorch image resolved 139 image paths link by link (5 ms); its 18 directories tell it.
 */

/** The directories, each with its identity. */
export type LinkProof = Array<[string, string]>;

type Fact = readonly [InputKind, string, string];

/**
 * The proof of the 'h' facts among `facts`, when there is one: each directory's identity is read
 * before the paths are resolved again to the values recorded, none changed after `settled` (a
 * change within the file system's timestamp tick could leave it unchanged), none is on a network
 * file system.
 */
export function proveLinks(facts: readonly Fact[], sysroot: string, settled: number, onNetworkFs: (dev: number, path: string) => boolean): LinkProof | undefined {
  const paths = facts.filter(([kind]) => kind === 'h');
  if (paths.length === 0 || sysroot === '') return undefined;
  const dirs = new Set<string>();
  for (const [, path] of paths) realpathInNow(sysroot, path, dirs);
  const proof: LinkProof = [];
  for (const dir of dirs) {
    const st = statOrNull(dir);
    if (!st?.isDirectory() || st.mtimeMs >= settled || st.ctimeMs >= settled || onNetworkFs(st.dev, dir)) return undefined;
    proof.push([dir, identity(st)]);
  }
  const again = new Set<string>();
  for (const [, path, value] of paths) if ((realpathInNow(sysroot, path, again) ?? '-') !== value) return undefined;
  return again.size === dirs.size && [...again].every((dir) => dirs.has(dir)) ? proof : undefined;
}

/**
 * Whether a stored proof holds now (a damaged one does not). When it does, the 'h' facts' answers
 * are kept for the rest of the check (the merge and the notes of libraries found elsewhere resolve
 * the same paths).
 */
export function linksHold(proof: unknown, sysroot: string, facts: readonly unknown[]): boolean {
  const holds = Array.isArray(proof) && proof.length > 0 && proof.every((d) => {
    const st = Array.isArray(d) && typeof d[0] === 'string' ? statOrNull(d[0]) : null;
    return st !== null && identity(st) === d[1];
  });
  if (holds) {
    const answers: Array<[string, string | undefined]> = [];
    for (const fact of facts) {
      if (Array.isArray(fact) && fact[0] === 'h' && typeof fact[1] === 'string' && typeof fact[2] === 'string') answers.push([fact[1], fact[2] === '-' ? undefined : fact[2]]);
    }
    rememberRealpathsIn(sysroot, answers);
  }
  return holds;
}
