import {closeSync, existsSync, openSync, readSync, readdirSync, realpathSync} from 'node:fs';
import {basename, join} from 'node:path';
import {isVersion} from '../versions/version.js';
import type {ToolkitState} from './toolkit.js';

/** The marker line of src/core/conda's scripts (names.ts HOOK_MARKER), followed by the hook's JSON. */
const HOOK_MARKER = '# cudaenv-conda-hook: ';
import type {DoctorContext, Finding} from './types.js';

export interface CondaFacts {
  prefix: string | null;
  hooks: Array<{file: string; version: string | null; toolkit: string | null}>;
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
 * The version a cudaenv conda hook script pins. Hook scripts are data here, never run:
 * the `# cudaenv-conda-hook: {json}` marker `cudaenv conda hook install` writes (its HookInfo),
 * else a `# cudaenv-version: X` header line, else the
 * `<store>/versions/<label>` path it exports (every hook contains its toolkit path).
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

/** The active conda environment's cudaenv hook (activate.d/*cudaenv*) against the active selection. */
export function condaFindings(ctx: DoctorContext, toolkits: ToolkitState): {facts: CondaFacts; findings: Finding[]} {
  const prefix = ctx.env.CONDA_PREFIX || null;
  const findings: Finding[] = [];
  if (!prefix) return {facts: {prefix: null, hooks: []}, findings};
  const dir = join(prefix, 'etc', 'conda', 'activate.d');
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => n.includes('cudaenv')).sort();
  } catch {
    // no activate.d
  }
  // One hook is written per shell (.sh, .fish, .csh); the POSIX one speaks for all.
  const hooks = names.map((n) => {
    const text = head(join(dir, n)) ?? '';
    return {file: join(dir, n), ...hookVersion(text, ctx.paths.versions)};
  });
  const facts: CondaFacts = {prefix, hooks};
  if (hooks.length === 0) return {facts, findings};
  const primary = hooks.find((h) => h.file.endsWith('.sh') && h.version) ?? hooks.find((h) => h.version) ?? hooks[0]!;
  const env = basename(prefix);
  if (!primary.version) {
    findings.push({
      id: 'conda.hook-unreadable',
      severity: 'warning',
      title: `The cudaenv hook of conda environment ${env} does not say which version it activates`,
      evidence: hooks.map((h) => h.file),
      fix: `cudaenv conda hook install VERSION -p ${prefix} (rewrites it)`,
    });
    return {facts, findings};
  }
  const versionDir = primary.toolkit ?? join(ctx.paths.versions, primary.version);
  const evidence = [`${primary.file}: CUDA ${primary.version}`];
  if (!existsSync(versionDir)) {
    findings.push({
      id: 'conda.hook-version-missing',
      severity: 'error',
      title: `The cudaenv hook of conda environment ${env} activates CUDA ${primary.version}, which is not installed: activating it changes nothing`,
      evidence: [...evidence, `${versionDir} does not exist`],
      fix: `cudaenv install ${primary.version}, or cudaenv conda hook install VERSION -p ${prefix}`,
    });
    return {facts, findings};
  }
  findings.push({id: 'conda.hook', severity: 'info', title: `Conda environment ${env} has a cudaenv hook for CUDA ${primary.version}`, evidence, fix: null});
  const sel = toolkits.selection;
  if (sel.label && sel.label !== primary.version) {
    findings.push({
      id: 'conda.hook-mismatch',
      severity: 'warning',
      title: `Conda environment ${env} pins CUDA ${primary.version} but cudaenv selects ${sel.label} (${sel.origin})`,
      evidence: [...evidence, `cudaenv: ${sel.label} (${sel.origin})`],
      fix: `cudaenv conda hook install ${sel.label} -p ${prefix}, or change what selects ${sel.label}`,
    });
  }
  const home = ctx.env.CUDA_HOME;
  const same = (a: string, b: string): boolean => {
    try {
      return realpathSync(a) === realpathSync(b);
    } catch {
      return a === b;
    }
  };
  if (!home || !same(home, versionDir)) {
    findings.push({
      id: 'conda.hook-not-applied',
      severity: 'warning',
      title: `The cudaenv hook of conda environment ${env} is not in effect in this shell (CUDA_HOME is ${home ? home : 'unset'})`,
      evidence: [...evidence, `expected CUDA_HOME=${versionDir}`],
      fix: `conda deactivate && conda activate ${prefix}`,
    });
  }
  return {facts, findings};
}
