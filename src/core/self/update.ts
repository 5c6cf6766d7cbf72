import {spawnSync} from 'node:child_process';
import {createHash} from 'node:crypto';
import {chmodSync, closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync} from 'node:fs';
import {arch} from 'node:os';
import {basename, dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {CudaenvError, UsageError} from '../errors.js';
import {accessHint, discard, httpGet, networkHint, readBody} from '../remote/http.js';
import {redactCredentials} from '../text/redact.js';
import {exeState} from './installation.js';
import {RELEASE_PUBLIC_KEY} from './release-key.js';
import {checkListing, compareReleaseVersions, expectedSum, parseReleaseVersion, parseSums, signatureValid, SUMS, SUMS_SIG, VERSION_FILE} from './release.js';

/**
 * `cudaenv self-update`: the single executable replaces itself with the newest one from the
 * base URL install.sh installed it from (or CUDAENV_INSTALL_BASE), checked against the release's
 * SHA256SUMS, signed by the release key (./release-key.ts), atomically (a rename over the old file: a cudaenv running keeps its own). Installs
 * that another tool manages (npm, pip, pipx, uv) are refused with that tool's command, as uv does.
 */

/** What install.sh writes next to the executable (the receipt, as uv's installer calls it). */
export const RECEIPT = '.cudaenv-receipt.json';

export interface UpdateResult {
  path: string;
  from: string;
  to: string;
  updated: boolean;
  base: string;
}

/** Who manages the running cudaenv, when it is not self-update's to replace: the refusal, with that tool's command. */
export function managedBy(execPath: string = process.execPath): CudaenvError | undefined {
  if (!exeState()) {
    const root = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '');
    const hint = existsSync(join(root, '.git'))
      ? `Update the clone: git -C ${root} pull && npm --prefix ${root} ci (npm ci builds it).`
      : 'Install the new package the way this one was installed: npm install -g ./cudaenv-VERSION.tgz, or npm install -g git+https://HOST/OWNER/cudaenv.git (README: Installing cudaenv).';
    return new UsageError(`this cudaenv runs from the npm package at ${root}: self-update replaces only the single executable that install.sh installs`, hint);
  }
  const prefix = dirname(dirname(execPath));
  const python = pythonDistInfo(prefix);
  if (python) {
    const hint = /\/pipx\/venvs\/[^/]+$/.test(prefix)
      ? 'Update it with pipx: pipx upgrade cudaenv'
      : /\/uv\/tools\/[^/]+$/.test(prefix)
        ? 'Update it with uv: uv tool upgrade cudaenv'
        : `Update it with pip from the new release's wheel (the name cudaenv on the Python package index is not this project's): ${join(prefix, 'bin', 'python')} -m pip install --upgrade BASE/cudaenv-VERSION-py3-none-manylinux_2_28_${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}.whl, BASE being the release's download URL`;
    return new UsageError(`this cudaenv was installed as a Python package (${python}): self-update leaves it to the tool that installed it`, hint);
  }
  return undefined;
}

/** The cudaenv-*.dist-info that a pip install of the wheel put in PREFIX's site-packages, if any. */
function pythonDistInfo(prefix: string): string | undefined {
  try {
    for (const lib of readdirSync(join(prefix, 'lib'))) {
      if (!lib.startsWith('python')) continue;
      const site = join(prefix, 'lib', lib, 'site-packages');
      for (const entry of readdirSync(site)) if (/^cudaenv-[^-]+\.dist-info$/.test(entry)) return join(site, entry);
    }
  } catch {
    // no such layout: not a Python environment
  }
  return undefined;
}

/** The base URL: CUDAENV_INSTALL_BASE, else the one the receipt names. */
export function updateBase(execPath: string = process.execPath, env: NodeJS.ProcessEnv = process.env): string {
  if (env.CUDAENV_INSTALL_BASE) return checkBase(env.CUDAENV_INSTALL_BASE, 'CUDAENV_INSTALL_BASE');
  const receipt = join(dirname(execPath), RECEIPT);
  let text: string;
  try {
    text = readFileSync(receipt, 'utf8');
  } catch {
    throw new UsageError(`self-update does not know where releases are: ${execPath} was not installed by install.sh (it left no ${receipt})`,
      'Set CUDAENV_INSTALL_BASE to the URL of a cudaenv release\'s files (cudaenv-linux-*.tar.xz and SHA256SUMS), or install with install.sh, which remembers it.');
  }
  let base: unknown;
  try {
    base = (JSON.parse(text) as {base?: unknown}).base;
  } catch {
    base = undefined;
  }
  if (typeof base !== 'string') {
    throw new CudaenvError(`${receipt} is damaged: it names no base URL`, {hint: 'Run install.sh again (it rewrites the file), or set CUDAENV_INSTALL_BASE.'});
  }
  return checkBase(base, receipt);
}

function checkBase(base: string, source: string): string {
  if (!/^(https?|file):\/\/./.test(base)) {
    throw new UsageError(`${redactCredentials(base)} (from ${source}) is not an http://, https:// or file:// URL`, 'Set CUDAENV_INSTALL_BASE to the URL of a directory holding cudaenv-linux-*.tar.xz and SHA256SUMS.');
  }
  return base.replace(/\/+$/, '');
}

/** Downloads URL into FILE (created, never replaced), returning its SHA-256. A redirect from https never goes to http. */
async function download(url: string, file: string): Promise<string> {
  const hash = createHash('sha256');
  const fd = openSync(file, 'wx', 0o600);
  try {
    if (url.startsWith('file://')) {
      const data = readFileSync(fileURLToPath(url));
      hash.update(data);
      writeSync(fd, data);
    } else {
      const res = await httpGet(url);
      if (res.statusCode !== 200) {
        discard(res);
        throw new CudaenvError(`cannot download ${redactCredentials(url)}: HTTP ${res.statusCode}`, {hint: accessHint(res.statusCode, url) ?? 'Check the URL (CUDAENV_INSTALL_BASE, or the base install.sh remembered) and that it holds a cudaenv release.'});
      }
      for await (const chunk of readBody(res)) {
        hash.update(chunk);
        writeSync(fd, chunk);
      }
    }
    fsyncSync(fd);
  } catch (error) {
    if (error instanceof CudaenvError) throw error;
    const hint = ['EBADREDIRECT', 'EDOWNGRADE'].includes((error as {code?: string}).code ?? '')
      ? 'Nothing was replaced: from an https base, cudaenv follows no redirect to plain http. Use a base that serves over https throughout (or, knowingly, an http:// one in CUDAENV_INSTALL_BASE: the release\'s signature is still checked).'
      : networkHint(error, 'Check the network and the base URL, then run cudaenv self-update again.');
    throw new CudaenvError(`cannot download ${redactCredentials(url)}: ${(error as Error).message}`, {hint});
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

export interface SelfUpdateOptions {
  /** Install a release older than the running cudaenv (`--allow-downgrade`). */
  allowDowngrade?: boolean;
  /**
   * The key the release's SHA256SUMS must be signed with: the built-in one (./release-key.ts).
   * Only tests pass another (a key pair of their own); no command, variable or file sets it.
   */
  releaseKey?: string;
}

/**
 * The update, in this order: SHA256SUMS and SHA256SUMS.sig, the signature checked with the
 * release key; VERSION, checked against the signed list (the running executable's own SHA-256
 * listed there: nothing to do, the archive is not downloaded); a release older than the running
 * cudaenv is refused unless allowed; the archive, checked against the signed list; its listing
 * (one regular file, cudaenv), unpacked into a private directory and checked again (a regular
 * file with the SHA-256 the list gives the executable). Only then does the new executable run
 * (--version: does it start here?), and it is renamed over the running one.
 */
export async function selfUpdate(execPath: string = process.execPath, env: NodeJS.ProcessEnv = process.env, options: SelfUpdateOptions = {}): Promise<UpdateResult> {
  const refusal = managedBy(execPath);
  if (refusal) throw refusal;
  const base = updateBase(execPath, env);
  const shown = redactCredentials(base);
  const exeName = `cudaenv-linux-${arch() === 'arm64' ? 'arm64' : 'x64'}`;
  const name = `${exeName}.tar.xz`;
  const dir = dirname(execPath);
  const from = runningVersion(execPath);
  let work: string;
  try {
    // In the executable's directory (the rename below stays on one file system); mkdtemp: a random name, mode 0700.
    work = mkdtempSync(join(dir, '.cudaenv-update-'));
  } catch (error) {
    throw new CudaenvError(`cannot write in ${dir}, where ${basename(execPath)} is: ${(error as Error).message}`, {hint: `Run cudaenv self-update as the owner of ${dir}.`});
  }
  const nothing = 'nothing was replaced';
  try {
    await download(`${base}/${SUMS}`, join(work, SUMS));
    const sumsBytes = readFileSync(join(work, SUMS));
    await downloadSignature(`${base}/${SUMS_SIG}`, join(work, SUMS_SIG));
    const sig = readFileSync(join(work, SUMS_SIG));
    if (!signatureValid(sumsBytes, sig, options.releaseKey ?? RELEASE_PUBLIC_KEY)) {
      throw new CudaenvError(`${shown}/${SUMS_SIG} is not a signature of ${shown}/${SUMS} by cudaenv's release key${sig.length === 64 ? '' : ` (it is ${sig.length} bytes; an ed25519 signature is 64)`}: ${nothing}`, {
        hint: 'The files at the base URL are not a cudaenv release as published (altered, or damaged on the way). Check the base URL (CUDAENV_INSTALL_BASE, or the one install.sh remembered in its receipt), then run cudaenv self-update again.',
      });
    }
    const sums = parseSums(sumsBytes.toString('utf8'), `${shown}/${SUMS}`);
    const versionSum = await download(`${base}/${VERSION_FILE}`, join(work, VERSION_FILE));
    checkSum(`${shown}/${VERSION_FILE}`, versionSum, expectedSum(sums, VERSION_FILE, `${shown}/${SUMS}`));
    const to = parseReleaseVersion(readFileSync(join(work, VERSION_FILE), 'utf8'), `${shown}/${VERSION_FILE}`);
    const exeSum = expectedSum(sums, exeName, `${shown}/${SUMS}`);
    if (sha256File(execPath) === exeSum) return {path: execPath, from: `cudaenv/${from}`, to: `cudaenv/${to}`, updated: false, base};
    if (compareReleaseVersions(to, from) < 0 && !options.allowDowngrade) {
      throw new UsageError(`the release at ${shown} is cudaenv ${to}, older than this cudaenv ${from}: ${nothing}`,
        'An older release can carry fixed bugs and holes again. To go back to it anyway, run cudaenv self-update --allow-downgrade.');
    }
    const archiveSum = expectedSum(sums, name, `${shown}/${SUMS}`);
    checkSum(`${shown}/${name}`, await download(`${base}/${name}`, join(work, name)), archiveSum);
    const listing = (verbose: boolean) => spawnSync('tar', [verbose ? '-tvJf' : '-tJf', join(work, name)], {encoding: 'utf8'});
    const names = listing(false);
    const lines = listing(true);
    for (const r of [names, lines]) {
      if (r.status !== 0) throw new CudaenvError(`cannot list ${name}: ${(r.stderr || r.error?.message || `tar exit ${r.status}`).trim()}`, {hint: 'It needs tar and xz (apt-get install xz-utils); run cudaenv self-update again.'});
    }
    checkListing(names.stdout, lines.stdout, `${shown}/${name}`);
    const unpacked = join(work, 'x');
    mkdirSync(unpacked, {mode: 0o700});
    const x = spawnSync('tar', ['-xJf', join(work, name), '-C', unpacked, '--no-same-owner', '--no-same-permissions', 'cudaenv'], {encoding: 'utf8'});
    if (x.status !== 0) throw new CudaenvError(`cannot unpack ${name}: ${(x.stderr || x.error?.message || `tar exit ${x.status}`).trim()}`, {hint: 'It needs tar and xz (apt-get install xz-utils); run cudaenv self-update again.'});
    const fresh = join(unpacked, 'cudaenv');
    const st = lstatSync(fresh, {throwIfNoEntry: false});
    if (!st?.isFile()) throw new CudaenvError(`${name} unpacked no regular file cudaenv: ${nothing}`, {hint: 'A cudaenv release\'s archive holds one regular file, cudaenv. Check the base URL.'});
    checkSum(`cudaenv in ${shown}/${name}`, sha256File(fresh), exeSum);
    chmodSync(fresh, 0o755);
    // Verified (signature, then SHA-256): only now may it run.
    const probe = spawnSync(fresh, ['--version'], {encoding: 'utf8', env: {...env, CUDAENV_DIR: join(work, 'store')}});
    if (probe.status !== 0) throw new CudaenvError(`the downloaded cudaenv does not run here: ${(probe.stderr || probe.error?.message || '').trim()}`, {hint: `Nothing was replaced. It needs glibc >= 2.28, libstdc++ and libatomic.`});
    renameSync(fresh, execPath);
    refreshShellFiles(execPath, env);
    return {path: execPath, from: `cudaenv/${from}`, to: `cudaenv/${to}`, updated: true, base};
  } finally {
    rmSync(work, {recursive: true, force: true});
  }
}

/** SHA256SUMS.sig, whose absence says more than "HTTP 404": the base holds no signed release. */
async function downloadSignature(url: string, file: string): Promise<void> {
  try {
    await download(url, file);
  } catch (error) {
    if (error instanceof CudaenvError && / HTTP 404$|ENOENT/.test(error.message)) {
      throw new CudaenvError(`${redactCredentials(url)} does not exist: the release at that base is not signed, so nothing was replaced`, {
        hint: 'cudaenv installs only releases whose SHA256SUMS is signed by its release key. Point CUDAENV_INSTALL_BASE at a signed release (one that has SHA256SUMS.sig), or at a mirror that copies it.',
      });
    }
    throw error;
  }
}

function checkSum(what: string, actual: string, expected: string): void {
  if (actual !== expected) {
    throw new CudaenvError(`${what} has SHA-256 ${actual}, but SHA256SUMS says ${expected}: nothing was replaced`, {
      hint: 'The download was damaged or the release\'s files do not match; run cudaenv self-update again, or check the base URL.',
    });
  }
}

/** The running executable's version (the bundle's package.json), without running anything. */
function runningVersion(execPath: string): string {
  const state = exeState();
  if (!state) throw new UsageError(`${execPath} is not the single executable`, 'self-update replaces only the executable install.sh installs.');
  return state.version;
}

function sha256File(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/**
 * The start files (<store>/shell/init.SHELL) source the shell code of the build that wrote them:
 * the new executable writes them again (its `init`), so open shells' next start uses its code.
 */
function refreshShellFiles(exe: string, env: NodeJS.ProcessEnv): void {
  const state = exeState();
  if (!state) return;
  const shellDir = join(dirname(dirname(state.root)), 'shell');
  for (const shell of ['bash', 'zsh', 'fish']) {
    if (existsSync(join(shellDir, `init.${shell}`))) spawnSync(exe, ['init', shell], {env, stdio: 'ignore'});
  }
}
