import fs from 'node:fs';
import {isAbsolute, join, relative, sep} from 'node:path';
import {fileURLToPath} from 'node:url';

/** fs.readFileSync as it was before installVfs: what is on disk, never the executable's copy. */
export const diskReadFileSync: typeof fs.readFileSync = fs.readFileSync;

/**
 * The single executable's package files (package.json, oclif.manifest.json, the release table,
 * shims/) live in the executable, not on disk. cudaenv's modules find them as the npm package
 * lays them out, relative to their own URL (`new URL('../../../shims/shim.sh', import.meta.url)`);
 * in the executable every module's URL is inside ROOT (scripts/build-exe.mjs), and these reads of
 * a file under ROOT are answered from the executable. Anything else, and a file under ROOT that the
 * executable does not carry (the shell scripts `init` writes there for the start file to source),
 * is read from disk as usual.
 */
export function installVfs(root: string, files: Readonly<Record<string, string>>): void {
  const lookup = (path: unknown): string | undefined => {
    let p: string;
    if (typeof path === 'string') p = path;
    else if (path instanceof URL && path.protocol === 'file:') p = fileURLToPath(path);
    else return undefined;
    if (!isAbsolute(p)) return undefined;
    const rel = relative(root, p);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return undefined;
    return Object.hasOwn(files, rel.split(sep).join('/')) ? files[rel.split(sep).join('/')] : undefined;
  };
  const encode = (text: string, options: unknown): string | Buffer => {
    const encoding = typeof options === 'string' ? options : (options as {encoding?: BufferEncoding} | undefined)?.encoding;
    return encoding ? Buffer.from(text, 'utf8').toString(encoding as BufferEncoding) : Buffer.from(text, 'utf8');
  };

  const readFileSync = fs.readFileSync;
  fs.readFileSync = function (path: unknown, options?: unknown) {
    const text = lookup(path);
    return text === undefined ? Reflect.apply(readFileSync, fs, [path, options]) : encode(text, options);
  } as typeof fs.readFileSync;

  const readFile = fs.promises.readFile;
  fs.promises.readFile = async function (path: unknown, options?: unknown) {
    const text = lookup(path);
    return text === undefined ? Reflect.apply(readFile, fs.promises, [path, options]) : encode(text, options);
  } as typeof fs.promises.readFile;

  const existsSync = fs.existsSync;
  fs.existsSync = function (path: unknown) {
    return lookup(path) !== undefined || Reflect.apply(existsSync, fs, [path]);
  } as typeof fs.existsSync;
}

/** The path of FILE (a path relative to the package's root, `/`-separated) under ROOT. */
export function vfsPath(root: string, file: string): string {
  return join(root, ...file.split('/'));
}
