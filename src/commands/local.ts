import {Args, Flags} from '@oclif/core';
import {lstatSync, readFileSync, statSync} from 'node:fs';
import {join, resolve} from 'node:path';
import {CudaenvCommand} from '../cli/base.js';
import {CudaenvError, isErrno, UsageError} from '../core/errors.js';
import {writeFileSafely} from '../core/safe-fs/index.js';
import {refuseForeignDirectory} from '../core/store/store-owner.js';
import {refusePrefixedVersion, resolveSpec} from '../core/selection/resolve.js';
import {logicalCwd} from '../core/selection/select.js';
import {parseSpec} from '../core/versions/spec.js';
import {VERSION_FILE, VersionFileError, findVersionFile, formatVersionFile, readVersionFile, replaceSpecInText} from '../core/versions/version-file.js';
import {quoteSh} from '../core/text/quote.js';

export default class Local extends CudaenvCommand {
  static override summary = 'Pin this directory tree to a CUDA version (writes ./.cuda-version), or show the pin.';
  static override description = 'Without a spec, as `pyenv local`: shows the spec of the nearest .cuda-version (here or in a parent directory), what it selects and the file\'s path; exits 1 when there is none.';
  static override examples = ['<%= config.bin %> local 12.4', '<%= config.bin %> local'];
  static override args = {spec: Args.string({description: 'version spec (without one: show the nearest .cuda-version)'})};
  static override flags = {dir: Flags.string({description: 'directory to write .cuda-version in, or to look up from (default: the current one)'})};

  async run(): Promise<{path: string; spec: string; installed: boolean; resolves?: string | null}> {
    const {args, flags} = await this.parse(Local);
    if (args.spec === undefined) return this.show(resolve(flags.dir ?? logicalCwd()));
    const spec = parseSpec(args.spec);
    refusePrefixedVersion(resolveSpec(this.paths, spec), 'local');
    const dir = resolve(flags.dir ?? logicalCwd());
    // A mistyped --dir must not create a new directory tree.
    let isDir = false;
    try {
      isDir = statSync(dir).isDirectory();
    } catch {
      // reported below
    }
    if (!isDir) throw new UsageError(`--dir ${dir} is not an existing directory`, 'Give the project directory that should hold .cuda-version (create it first with mkdir -p).');
    const path = join(dir, VERSION_FILE);
    // `sudo cudaenv local` in the user's project: a root-owned .cuda-version the user could not change.
    refuseForeignDirectory(dir, path, ['local', ...this.argv]);
    const text = newFileText(path, spec.text);
    try {
      writeFileSafely(path, text);
    } catch (error) {
      throw new CudaenvError(`cannot write ${path}: ${isErrno(error) ? error.code : (error as Error).message}`, {
        hint: `Check that you may write in ${dir}, or give another directory with --dir.`,
        cause: error,
      });
    }
    const r = resolveSpec(this.paths, spec);
    const installed = r.system || r.label !== undefined;
    if (!this.jsonEnabled()) {
      this.log(`Wrote ${path}: ${spec.text}`);
      if (!installed) this.warn2(r.missingAlias !== undefined
        ? `no alias or version named ${r.missingAlias} yet; create it with \`cudaenv alias ${r.missingAlias} 12.4\``
        : `CUDA ${spec.text} is not installed yet; run \`cudaenv install ${r.target?.text ?? spec.text}\``);
    }
    return {path, spec: spec.text, installed};
  }

  /** `local` without a spec: the nearest .cuda-version, what it selects, or an error naming the directory. */
  private show(dir: string): {path: string; spec: string; installed: boolean; resolves: string | null} {
    const path = findVersionFile(dir);
    if (path === undefined) {
      throw new CudaenvError(`no .cuda-version in ${dir} or a parent directory: this directory has no local version`, {
        hint: 'Pin it with `cudaenv local 12.4`; `cudaenv current` shows the version that applies here (the global default, or system).',
        code: 'no-local-version',
      });
    }
    const file = readVersionFile(path);
    const r = resolveSpec(this.paths, file.spec);
    const resolves = r.system ? 'system' : (r.label ?? null);
    if (!this.jsonEnabled()) {
      this.log(`${file.spec.text}${resolves && resolves !== file.spec.text ? ` (${resolves})` : ''} (set by ${path})`);
      if (!resolves) this.warn2(r.missingAlias !== undefined
        ? `no alias or version named ${r.missingAlias} yet; create it with \`cudaenv alias ${r.missingAlias} 12.4\``
        : `CUDA ${file.spec.text} is not installed yet; run \`cudaenv install ${r.target?.text ?? file.spec.text}\``);
    }
    return {path, spec: file.spec.text, installed: resolves !== null, resolves};
  }
}

/** The new content: an existing valid file keeps everything but its spec line; an invalid one is not overwritten. */
function newFileText(path: string, specText: string): string {
  try {
    // lstat: a link to nothing (a loop, a missing target) is an invalid file, as `current` says.
    lstatSync(path);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return formatVersionFile(specText);
  }
  try {
    readVersionFile(path);
  } catch (error) {
    if (error instanceof VersionFileError) {
      throw new CudaenvError(`${error.message}; not overwriting it`, {hint: `Fix it by hand, or remove it (rm ${quoteSh(path)}) and run cudaenv local again.`, code: 'version-file'});
    }
    throw error;
  }
  return replaceSpecInText(readFileSync(path, 'utf8'), specText);
}
