import {spawnSync} from 'node:child_process';
import {copyFileSync, existsSync, mkdirSync, realpathSync, symlinkSync, writeFileSync} from 'node:fs';
import {dirname, join} from 'node:path';
import type {MissingName, Resolve} from './trace.js';

/**
 * System images of other glibc releases (and machines) for the loader tests: the distributions'
 * real packages, unpacked by test/fixtures/fetch-cuda-libs.sh, copied under a test's temporary
 * directory and run there with chroot. Used by loader-glibc-releases (x86-64) and loader-aarch64
 * (the image's aarch64 loader under qemu-user).
 */

/** `runin ROOT DIR [NAME=VALUE...] -- PROGRAM ARGS...`: chroot, chdir, execve with only those variables. */
const RUNIN_C = `#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
  char *env[64];
  int n = 0, i = 3;
  if (argc < 5 || chroot(argv[1]) != 0 || chdir(argv[2]) != 0) { perror("runin"); return 125; }
  for (; i < argc && strcmp(argv[i], "--") != 0 && n < 63; i++) env[n++] = argv[i];
  env[n] = NULL;
  if (i + 1 >= argc) return 125;
  execve(argv[i + 1], argv + i + 1, env);
  perror("runin: execve");
  return 126;
}
`;

/**
 * Builds the static `runin` helper at `path`: chroot(1) and unshare(1) are dynamic programs,
 * which LD_TRACE_LOADED_OBJECTS would turn into a listing of their own libraries.
 */
export function buildRunin(path: string): string {
  writeFileSync(`${path}.c`, RUNIN_C);
  const cc = spawnSync('gcc', ['-static', '-O', '-o', path, `${path}.c`], {encoding: 'utf8'});
  if (cc.status !== 0) throw new Error(`cannot build the static runin helper: ${cc.stderr}`);
  return path;
}

/** Shell quoting for the scripts that run many cases in one process. */
export const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The image at `source` copied to `root`, as a system of that release has it: merged-/usr links
 * where the packages leave them to base-files, and an ld.so.cache from the image's own ldconfig.
 * A relative link at the image's own host path leads to its root, so the absolute paths the cases
 * carry (RPATH, LD_LIBRARY_PATH, the target) name the same files inside the image (for ld.so) and
 * on the host (for the model and for comparing paths). `emulator`: a static qemu-user binary for
 * an image of another machine, copied to the image's /usr/bin, through which its programs run.
 */
export function makeImage(source: string, root: string, runin: string, emulator?: string): void {
  const cp = spawnSync('cp', ['-a', source, root], {encoding: 'utf8'});
  if (cp.status !== 0) throw new Error(`copying the image ${source} failed: ${cp.stderr}`);
  for (const l of ['lib', 'lib64', 'bin', 'sbin']) {
    if (!existsSync(join(root, l)) && existsSync(join(root, 'usr', l))) symlinkSync(`usr/${l}`, join(root, l));
  }
  const parts = root.split('/').filter(Boolean);
  mkdirSync(join(root, dirname(root)), {recursive: true});
  symlinkSync(Array(parts.length - 1).fill('..').join('/'), join(root, root));
  const run = emulator ? [emulatorIn(root, emulator)] : [];
  if (emulator) copyFileSync(emulator, join(root, run[0]!));
  // Ubuntu's /sbin/ldconfig is a shell script around ldconfig.real (and the image has no shell).
  const ldconfigPath = existsSync(join(root, 'sbin', 'ldconfig.real')) ? '/sbin/ldconfig.real' : '/sbin/ldconfig';
  const ldconfig = spawnSync(runin, [root, '/', '--', ...run, ldconfigPath], {encoding: 'utf8'});
  if (ldconfig.status !== 0) throw new Error(`ldconfig in the image ${root} failed: ${ldconfig.stderr}`);
}

/** Where makeImage puts the emulator inside the image. */
export function emulatorIn(root: string, emulator: string): string {
  void root;
  return `/usr/bin/${emulator.split('/').pop()!}`;
}

/** A path ld.so printed in the image (or the model in the sysroot), as one host file. */
export const inImage = (root: string): Resolve => (dir, p) => {
  const host = !p.startsWith('/') ? `${dir}/${p}` : p.startsWith(`${root}/`) ? p : `${root}${p}`;
  try {
    return realpathSync.native(host);
  } catch {
    return `?${p}`;
  }
};

/**
 * A library's name ld.so made from the working directory in the image (a relative RPATH entry, an
 * object loaded under a relative name): getcwd there gives the image's path, `/fz/c1`, where the
 * model, given the host path as its cwd, names the same directory `<root>/fz/c1`.
 */
export const inImageName = (root: string): MissingName => (name) => (name.startsWith('/') && !name.startsWith(`${root}/`) ? `${root}${name}` : name);
