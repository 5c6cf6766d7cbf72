import {lstatSync, mkdirSync, readdirSync, renameSync, rmSync, symlinkSync} from 'node:fs';
import {join} from 'node:path';
import {CudaenvError} from '../errors.js';

/**
 * Moves one extracted component into the toolkit prefix. Archives ship `lib/`; CUDA users,
 * nvcc.profile (`lib$(_TARGET_SIZE_)`) and build systems expect `lib64/`, so a top-level
 * `lib/` merges into `lib64/` (and `lib` becomes a link to it at the end). Each archive's
 * top-level LICENSE goes to `licenses/<component>/` instead of overwriting the others'.
 * Only renames: the parts lie on the same file system as the prefix.
 */
export function mergeComponent(partDir: string, root: string, component: string): void {
  mkdirSync(root, {recursive: true});
  for (const name of readdirSync(partDir)) {
    const src = join(partDir, name);
    const st = lstatSync(src);
    if (name === 'lib' && st.isSymbolicLink()) continue; // we make our own lib -> lib64
    if (/^(LICENSE|EULA)/i.test(name) && st.isFile()) {
      const dir = join(root, 'licenses', component);
      mkdirSync(dir, {recursive: true});
      renameSync(src, join(dir, name));
      continue;
    }
    mergeEntry(src, join(root, name === 'lib' ? 'lib64' : name), component);
  }
  rmSync(partDir, {recursive: true, force: true});
}

function mergeEntry(src: string, dst: string, component: string): void {
  let existing;
  try {
    existing = lstatSync(dst);
  } catch {
    renameSync(src, dst);
    return;
  }
  const st = lstatSync(src);
  if (st.isDirectory() && existing.isDirectory()) {
    for (const name of readdirSync(src)) mergeEntry(join(src, name), join(dst, name), component);
    return;
  }
  if (st.isDirectory() || existing.isDirectory()) {
    throw new CudaenvError(`the component ${component} provides ${dst} as a ${st.isDirectory() ? 'directory' : 'file'}, but another component already put a ${existing.isDirectory() ? 'directory' : 'file'} there`, {
      hint: 'Install the components separately (--components) or report the conflict.', code: 'merge-conflict',
    });
  }
  // The same file shipped by two components: the later one wins. Unlinked first: ext4 starts
  // writing out the data of a file renamed over another (auto_da_alloc), and merging the
  // headers several archives ship waited on that (0.3-0.7 s of the benchmark's merge, 0.2 now).
  rmSync(dst, {force: true});
  renameSync(src, dst);
}

/** `lib -> lib64` where the archives provided libraries. */
export function linkLib(root: string): void {
  try {
    lstatSync(join(root, 'lib64'));
  } catch {
    return;
  }
  try {
    lstatSync(join(root, 'lib'));
    return;
  } catch {
    symlinkSync('lib64', join(root, 'lib'));
  }
}
