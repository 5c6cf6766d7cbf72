import {spawnSync} from 'node:child_process';
import {createHash} from 'node:crypto';
import {chmodSync, closeSync, existsSync, fsyncSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync} from 'node:fs';
import {arch} from 'node:os';
import {basename, dirname, join} from 'node:path';
import {fileURLToPath} from 'node:url';
import {CudaenvError, UsageError} from '../errors.js';
import {accessHint, discard, httpGet, networkHint, readBody} from '../remote/http.js';
import {redactCredentials} from '../text/redact.js';
import {exeState} from './installation.js';

/**
 * `cudaenv self-update`: the single executable replaces itself with the newest one from the
 * base URL install.sh installed it from (or CUDAENV_INSTALL_BASE), checked against the release's
 * SHA256SUMS, atomically (a rename over the old file: a cudaenv running keeps its own). Installs
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
        : `Update it with pip: ${join(prefix, 'bin', 'python')} -m pip install --upgrade cudaenv`;
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

/** Downloads URL into FILE (created, never replaced), returning its SHA-256. */
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
    throw new CudaenvError(`cannot download ${redactCredentials(url)}: ${(error as Error).message}`, {hint: networkHint(error, 'Check the network and the base URL, then run cudaenv self-update again.')});
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/** The SHA-256 that SHA256SUMS gives for NAME. */
export function expectedSum(sums: string, name: string, where: string): string {
  for (const line of sums.split('\n')) {
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line.trim());
    if (m && m[2] === name) return m[1]!;
  }
  throw new CudaenvError(`${where} lists no ${name}`, {hint: 'The base URL must hold the files of one release, SHA256SUMS included.'});
}

/** The update: download, check, unpack, try, and rename over the running executable. */
export async function selfUpdate(execPath: string = process.execPath, env: NodeJS.ProcessEnv = process.env): Promise<UpdateResult> {
  const refusal = managedBy(execPath);
  if (refusal) throw refusal;
  const base = updateBase(execPath, env);
  const name = `cudaenv-linux-${arch() === 'arm64' ? 'arm64' : 'x64'}.tar.xz`;
  const dir = dirname(execPath);
  let work: string;
  try {
    // In the executable's directory: the rename below stays on one file system.
    work = mkdtempSync(join(dir, '.cudaenv-update-'));
  } catch (error) {
    throw new CudaenvError(`cannot write in ${dir}, where ${basename(execPath)} is: ${(error as Error).message}`, {hint: `Run cudaenv self-update as the owner of ${dir}.`});
  }
  try {
    await download(`${base}/SHA256SUMS`, join(work, 'SHA256SUMS'));
    const expected = expectedSum(readFileSync(join(work, 'SHA256SUMS'), 'utf8'), name, `${redactCredentials(base)}/SHA256SUMS`);
    const actual = await download(`${base}/${name}`, join(work, name));
    if (actual !== expected) {
      throw new CudaenvError(`${redactCredentials(base)}/${name} has SHA-256 ${actual}, but SHA256SUMS says ${expected}: nothing was replaced`, {
        hint: 'The download was damaged or the release\'s files do not match; run cudaenv self-update again, or check the base URL.',
      });
    }
    const x = spawnSync('tar', ['-xJf', join(work, name), '-C', work, 'cudaenv'], {encoding: 'utf8'});
    if (x.status !== 0) throw new CudaenvError(`cannot unpack ${name}: ${(x.stderr || x.error?.message || `tar exit ${x.status}`).trim()}`, {hint: 'It needs tar and xz (apt-get install xz-utils); run cudaenv self-update again.'});
    const fresh = join(work, 'cudaenv');
    chmodSync(fresh, 0o755);
    const from = versionOf(execPath);
    const probe = spawnSync(fresh, ['--version'], {encoding: 'utf8', env: {...env, CUDAENV_DIR: join(work, 'store')}});
    if (probe.status !== 0) throw new CudaenvError(`the downloaded cudaenv does not run here: ${(probe.stderr || probe.error?.message || '').trim()}`, {hint: 'Nothing was replaced. It needs glibc >= 2.28, libstdc++ and libatomic.'});
    const to = probe.stdout.trim().split(' ')[0]!;
    if (sha256File(fresh) === sha256File(execPath)) return {path: execPath, from, to, updated: false, base};
    renameSync(fresh, execPath);
    refreshShellFiles(execPath, env);
    return {path: execPath, from, to, updated: true, base};
  } finally {
    rmSync(work, {recursive: true, force: true});
  }
}

function versionOf(exe: string): string {
  return exeState() ? `cudaenv/${exeState()!.version}` : basename(exe);
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
