import {closeSync, existsSync, openSync, readSync, readdirSync, realpathSync} from 'node:fs';
import {basename, join} from 'node:path';
import {readHook} from '../conda/hook-files.js';
import {HOOK_MARKER} from '../conda/names.js';
import {formatError} from '../errors.js';
import {quoteSh} from '../text/quote.js';
import {isVersion} from '../versions/version.js';
import type {ToolkitState} from './toolkit.js';
import type {DoctorContext, Finding} from './types.js';

export interface CondaHookFact {
  file: string;
  version: string | null;
  toolkit: string | null;
  /** 'prepend' | 'none' for hooks `cudaenv conda hook install` wrote; null for others. */
  ldLibraryPath: string | null;
  /** Files of the hook that are missing (a partly removed hook). */
  missing: string[];
}

export interface CondaFacts {
  prefix: string | null;
  hooks: CondaHookFact[];
}

function head(path: string, max = 64 * 1024): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buf = Buffer.alloc(max);
    return buf.subarray(0, readSync(fd, buf, 0, max, 0)).toString('utf8');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The version a cudaenv hook script names, for scripts that src/core/conda's readHook does
 * not recognise (hand-written, or older). Data only, never run: the marker line, a
 * `# cudaenv-version: X` header, or the `<store>/versions/<label>` path it contains.
 */
export function hookVersion(text: string, versionsDir: string): {version: string | null; toolkit: string | null} {
  const marker = text.split('\n').find((l) => l.startsWith(HOOK_MARKER));
  if (marker) {
    try {
      const info = JSON.parse(marker.slice(HOOK_MARKER.length)) as {version?: unknown; toolkit?: unknown};
      if (typeof info.version === 'string' && isVersion(info.version)) {
        return {version: info.version, toolkit: typeof info.toolkit === 'string' ? info.toolkit : null};
      }
    } catch {
      // a damaged marker: fall through to the other forms
    }
  }
  const header = /^#\s*cudaenv[- ]version:\s*(\S+)\s*$/im.exec(text);
  if (header && isVersion(header[1]!)) return {version: header[1]!, toolkit: null};
  const escaped = versionsDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`${escaped}/(\\d+\\.\\d+\\.\\d+)(?=[/'"\\s]|$)`, 'm').exec(text);
  if (m && isVersion(m[1]!)) return {version: m[1]!, toolkit: join(versionsDir, m[1]!)};
  return {version: null, toolkit: null};
}

/** Other `*cudaenv*` scripts in activate.d: what a hand-made or older hook looks like. */
function otherHooks(ctx: DoctorContext, prefix: string): CondaHookFact[] {
  const dir = join(prefix, 'etc', 'conda', 'activate.d');
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.includes('cudaenv')).sort();
  } catch {
    return [];
  }
  return names.map((n) => ({file: join(dir, n), ...hookVersion(head(join(dir, n)) ?? '', ctx.paths.versions), ldLibraryPath: null, missing: []}));
}

function sameDir(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return a === b;
  }
}

/**
 * The active conda environment's cudaenv hook, read through src/core/conda's readHook (the
 * marker line `cudaenv conda hook install` writes), against the active selection and this
 * shell's CUDA_HOME.
 */
export function condaFindings(ctx: DoctorContext, toolkits: ToolkitState): {facts: CondaFacts; findings: Finding[]} {
  const prefix = ctx.env.CONDA_PREFIX || null;
  const findings: Finding[] = [];
  if (!prefix) return {facts: {prefix: null, hooks: []}, findings};
  const env = basename(prefix);
  let hooks: CondaHookFact[] = [];
  try {
    const h = readHook(prefix);
    if (h) hooks = [{file: h.script, version: h.version, toolkit: h.toolkit, ldLibraryPath: h.ldLibraryPath, missing: h.missing}];
  } catch (error) {
    findings.push({
      id: 'conda.hook-unreadable',
      severity: 'warning',
      title: `The cudaenv hook of conda environment ${env} cannot be read`,
      evidence: formatError(error).split('\n'),
      fix: `cudaenv conda hook install VERSION -p ${quoteSh(prefix)} (rewrites it)`,
    });
    return {facts: {prefix, hooks}, findings};
  }
  if (hooks.length === 0) hooks = otherHooks(ctx, prefix);
  const facts: CondaFacts = {prefix, hooks};
  if (hooks.length === 0) return {facts, findings};
  const primary = hooks.find((h) => h.version) ?? hooks[0]!;
  if (!primary.version) {
    findings.push({
      id: 'conda.hook-unreadable',
      severity: 'warning',
      title: `The cudaenv hook of conda environment ${env} does not say which version it activates`,
      evidence: hooks.map((h) => h.file),
      fix: `cudaenv conda hook install VERSION -p ${quoteSh(prefix)} (rewrites it)`,
    });
    return {facts, findings};
  }
  const versionDir = primary.toolkit ?? join(ctx.paths.versions, primary.version);
  const evidence = [`${primary.file}: CUDA ${primary.version}${primary.ldLibraryPath ? `, LD_LIBRARY_PATH policy ${primary.ldLibraryPath}` : ''}`];
  if (!existsSync(versionDir)) {
    findings.push({
      id: 'conda.hook-version-missing',
      severity: 'error',
      title: `The cudaenv hook of conda environment ${env} activates CUDA ${primary.version}, which is not installed: activating it changes nothing`,
      evidence: [...evidence, `${versionDir} does not exist`],
      fix: `cudaenv install ${primary.version}, or cudaenv conda hook install VERSION -p ${quoteSh(prefix)}`,
    });
    return {facts, findings};
  }
  findings.push({id: 'conda.hook', severity: 'info', title: `Conda environment ${env} has a cudaenv hook for CUDA ${primary.version}`, evidence, fix: null});
  if (primary.missing.length > 0) {
    findings.push({
      id: 'conda.hook-incomplete',
      severity: 'warning',
      title: `The cudaenv hook of conda environment ${env} is missing ${primary.missing.length} of its scripts (shells using them get no CUDA, or keep it after deactivation)`,
      evidence: primary.missing,
      fix: `cudaenv conda hook install ${primary.version} -p ${quoteSh(prefix)}`,
    });
  }
  const sel = toolkits.selection;
  if (sel.label && sel.label !== primary.version) {
    findings.push({
      id: 'conda.hook-mismatch',
      severity: 'warning',
      title: `Conda environment ${env} pins CUDA ${primary.version} but cudaenv selects ${sel.label} (${sel.origin})`,
      evidence: [...evidence, `cudaenv: ${sel.label} (${sel.origin})`],
      fix: `cudaenv conda hook install ${sel.label} -p ${quoteSh(prefix)}, or change what selects ${sel.label}`,
    });
  }
  const home = ctx.env.CUDA_HOME;
  if (!home || !sameDir(home, versionDir)) {
    findings.push({
      id: 'conda.hook-not-applied',
      severity: 'warning',
      title: `The cudaenv hook of conda environment ${env} is not in effect in this shell (CUDA_HOME is ${home ? home : 'unset'})`,
      evidence: [...evidence, `expected CUDA_HOME=${versionDir}`],
      fix: `conda deactivate && conda activate ${quoteSh(prefix)}`,
    });
  }
  return {facts, findings};
}
