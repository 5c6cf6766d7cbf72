import {existsSync, statSync} from 'node:fs';
import {basename, dirname} from 'node:path';
import {cudaLibrariesIn, isCudaLibraryName, isDriverLibraryName} from './cuda-libs.js';
import {quoteSh} from '../text/quote.js';
import {readLdSoConf, type ConfDir} from './ld-so-conf.js';
import {displayPath, sysPath, sysRealpath} from './sysroot.js';
import {describeToolkitDir, type ToolkitState} from './toolkit.js';
import type {DoctorContext, Finding} from './types.js';

/** What doctor needs of one ld.so.cache entry. */
export interface CacheEntry {
  key: string;
  path: string;
}

export interface LoaderFacts {
  /** `sameAs`: the entry named the same directory (device and inode) earlier; ldconfig reads it once. */
  confDirs: Array<ConfDir & {exists: boolean; cudaLibraries: number; sameAs?: string}>;
  cacheFile: string;
  /** CUDA entries in the cache (null when no cache could be read). */
  cudaCacheEntries: number | null;
}

/** The toolkit root of a library path: .../lib64/x, .../lib/x or .../targets/<arch>/lib/x. */
function toolkitRootOf(libPath: string): string | undefined {
  const m = /^(.*?)\/(?:lib64|lib|targets\/[^/]+\/lib(?:64)?)\/[^/]+$/.exec(libPath);
  return m?.[1] || undefined;
}

function looksCuda(dir: string): boolean {
  return /cuda/i.test(dir);
}

/**
 * The system's loader view: ld.so.conf files that add CUDA directories, cache entries for
 * CUDA libraries that point at missing files, and entries that point into a toolkit other
 * than /usr/local/cuda's target (a cache not rebuilt after the link moved, or a
 * ld.so.conf.d file of another toolkit).
 */
export function loaderView(ctx: DoctorContext, toolkits: ToolkitState, cache: CacheEntry[] | undefined): {facts: LoaderFacts; findings: Finding[]} {
  const findings: Finding[] = [];
  // Followed inside the image: /usr/local/cuda/lib64 through an absolute /usr/local/cuda -> /usr/local/cuda-12.4
  // led nowhere on the host, and the image's directory was said not to exist (issue 37, 2f).
  // One directory by two names (/lib/x86_64-linux-gnu and /usr/lib/... under a merged /usr): ldconfig,
  // like ld.so, knows a directory by device and inode, and so does doctor (issue 42, 5).
  const byInode = new Map<string, string>();
  const confDirs = readLdSoConf(ctx).map((c) => {
    const real = sysRealpath(ctx, c.dir);
    const st = real ? statSync(real, {throwIfNoEntry: false}) : undefined;
    const id = st ? `${st.dev}:${st.ino}` : undefined;
    const sameAs = id ? byInode.get(id) : undefined;
    if (id && !sameAs) byInode.set(id, c.dir);
    return {...c, exists: real !== undefined && existsSync(real), cudaLibraries: real ? cudaLibrariesIn(real).length : 0, ...(sameAs ? {sameAs} : {})};
  });
  const cudaConf = confDirs.filter((c) => !c.sameAs && (c.cudaLibraries > 0 || looksCuda(c.dir)));
  const present = cudaConf.filter((c) => c.exists);
  if (present.length > 0) {
    const viaLink = present.some((c) => c.dir === '/usr/local/cuda' || c.dir.startsWith('/usr/local/cuda/'));
    findings.push({
      id: 'loader.conf-cuda-dirs',
      severity: 'info',
      title: `ld.so.conf adds CUDA directories to every program's library search`,
      evidence: present.map((c) => `${c.file}:${c.line}: ${c.dir} (${c.cudaLibraries} CUDA libraries)`),
      fix: viaLink ? 'These follow /usr/local/cuda: after it moves (cudaenv link), run `sudo ldconfig` so the cache follows' : null,
    });
  }
  for (const c of cudaConf.filter((x) => !x.exists)) {
    findings.push({
      id: 'loader.conf-missing-dir',
      severity: 'warning',
      title: `${c.file} names ${c.dir}, which does not exist (a removed toolkit?)`,
      evidence: [`${c.file}:${c.line}: ${c.dir}`],
      fix: `Remove the line (or the file: sudo rm ${quoteSh(c.file)}), then run sudo ldconfig`,
    });
  }

  const cacheFile = sysPath(ctx, '/etc/ld.so.cache');
  let cudaEntries: CacheEntry[] | undefined;
  if (cache) {
    cudaEntries = cache.filter((e) => isCudaLibraryName(e.key));
    // Followed inside the image: Debian's libcuda.so.1 is an absolute link to /etc/alternatives/..., which
    // the host resolves elsewhere (issue 37: three entries were called gone that were there).
    const missing = cudaEntries.filter((e) => sysRealpath(ctx, e.path) === undefined);
    if (missing.length > 0) {
      findings.push({
        id: 'loader.cache-stale-missing',
        severity: 'warning',
        title: `/etc/ld.so.cache lists ${missing.length} CUDA librar${missing.length === 1 ? 'y' : 'ies'} whose file no longer exists`,
        evidence: missing.slice(0, 8).map((e) => `${e.key} => ${e.path}`).concat(missing.length > 8 ? [`... and ${missing.length - 8} more`] : []),
        fix: 'sudo ldconfig (rebuilds the cache from ld.so.conf)',
      });
    }
    const usr = toolkits.usrLocalCuda.real;
    if (usr) {
      const confReal = new Set(present.map((c) => sysRealpath(ctx, c.dir)).filter((x): x is string => !!x));
      const byRoot = new Map<string, CacheEntry[]>();
      for (const e of cudaEntries) {
        if (isDriverLibraryName(e.key) || missing.includes(e)) continue;
        const root = toolkitRootOf(e.path);
        if (!root) continue;
        const rootReal = sysRealpath(ctx, root);
        if (!rootReal || rootReal === usr) continue;
        if (basename(dirname(e.path)) === 'compat') continue;
        const t = describeToolkitDir(ctx, rootReal);
        if (!t.version && !looksCuda(root)) continue; // a distribution's own dir, not a toolkit
        const list = byRoot.get(root) ?? [];
        list.push(e);
        byRoot.set(root, list);
      }
      for (const [root, list] of byRoot) {
        const t = describeToolkitDir(ctx, sysRealpath(ctx, root)!);
        const dirs = [...new Set(list.map((e) => dirname(e.path)))];
        const conf = confDirs.filter((c) => dirs.some((d) => sysRealpath(ctx, d) === sysRealpath(ctx, c.dir)) && c.exists);
        const stillConfigured = dirs.some((d) => confReal.has(sysRealpath(ctx, d) ?? ''));
        findings.push({
          id: 'loader.cache-other-toolkit',
          severity: 'warning',
          title: `/etc/ld.so.cache resolves ${list.length} CUDA librar${list.length === 1 ? 'y' : 'ies'} into ${displayPath(ctx, root)}${t.version ? ` (CUDA ${t.version})` : ''}, not /usr/local/cuda's ${displayPath(ctx, usr)}`,
          evidence: [...list.slice(0, 6).map((e) => `${e.key} => ${e.path}`), ...(list.length > 6 ? [`... and ${list.length - 6} more`] : []),
            ...conf.map((c) => `added by ${c.file}:${c.line}: ${c.dir}`)],
          fix: stillConfigured
            ? `Point ${conf.map((c) => c.file).join(', ') || 'the ld.so.conf file'} at /usr/local/cuda/lib64 (or remove it), then sudo ldconfig`
            : 'sudo ldconfig (the cache predates the current ld.so.conf)',
        });
      }
    }
  }
  return {facts: {confDirs, cacheFile: displayPath(ctx, cacheFile), cudaCacheEntries: cudaEntries ? cudaEntries.length : null}, findings};
}
