import {existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmdirSync, symlinkSync, unlinkSync} from 'node:fs';
import {join} from 'node:path';
import {writeFileSafely} from '../safe-fs/index.js';

/** Where pkg-config files of the toolkit go: `lib64/pkgconfig`, found with PKG_CONFIG_PATH=<prefix>/lib64/pkgconfig. */
export const PKGCONFIG_DIR = join('lib64', 'pkgconfig');

/**
 * Rewrites one of NVIDIA's `.pc` files for a flat prefix at `installedRoot`: `cudaroot=` (NVIDIA
 * writes its own build or /usr/local/cuda-X.Y path) becomes the installed path, and
 * `${cudaroot}/targets/<arch>-linux/{lib,include}` - a layout the flat prefix does not have -
 * becomes `${cudaroot}/lib64` and `${cudaroot}/include`.
 */
export function rewritePcText(text: string, installedRoot: string): string {
  return text.split('\n').map((line) => {
    if (/^\s*cudaroot\s*=/.test(line)) return `cudaroot=${pcEscape(installedRoot)}`;
    return line
      .replace(/\$\{cudaroot\}\/targets\/[^/\s]+\/lib(?:64)?(?=\/|\s|$)/g, '${cudaroot}/lib64')
      .replace(/\$\{cudaroot\}\/targets\/[^/\s]+\/include(?=\/|\s|$)/g, '${cudaroot}/include');
  }).join('\n');
}

/**
 * A path as a .pc variable value: pkg-config splits Cflags/Libs like a shell after expanding
 * variables, and `#` starts a comment, so blanks, quotes, backslashes and `#` are
 * backslash-escaped. pkg-config then prints shell-quoted words (`-I/a\\ b/include`), which
 * build systems that parse its output (meson, CMake, `eval`) take back whole.
 */
export function pcEscape(path: string): string {
  return path.replace(/[\s"'\\#]/g, (c) => `\\${c}`);
}

/**
 * Archives ship their `.pc` files in a top-level `pkg-config/` (some `pkgconfig/`), where
 * pkg-config never looks. Moves them to `lib64/pkgconfig` with the root rewritten, and adds an
 * unversioned name (`cudart.pc` for `cudart-12.4.pc`) where none exists, as distributions do.
 * Symbolic links and anything but regular `.pc` files are left where they are.
 * Returns the names written.
 */
export function relocatePkgConfig(root: string, installedRoot: string): string[] {
  const written: string[] = [];
  for (const dirName of ['pkg-config', 'pkgconfig']) {
    const dir = join(root, dirName);
    let entries: string[];
    try {
      if (!lstatSync(dir).isDirectory()) continue;
      entries = readdirSync(dir);
    } catch {
      continue;
    }
    const dest = join(root, PKGCONFIG_DIR);
    mkdirSync(dest, {recursive: true});
    for (const name of entries.filter((n) => n.endsWith('.pc'))) {
      const src = join(dir, name);
      if (!lstatSync(src).isFile()) continue;
      writeFileSafely(join(dest, name), rewritePcText(readFileSync(src, 'utf8'), installedRoot));
      unlinkSync(src);
      written.push(name);
    }
    try {
      rmdirSync(dir); // only when it held nothing else
    } catch {
      // something other than .pc files stays where the archive put it
    }
  }
  for (const name of written) {
    const plain = name.replace(/-\d+(\.\d+)*\.pc$/, '.pc');
    const link = join(root, PKGCONFIG_DIR, plain);
    if (plain !== name && !existsSync(link)) symlinkSync(name, link);
  }
  return written;
}
