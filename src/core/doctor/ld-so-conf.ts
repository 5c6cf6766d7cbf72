import {readFileSync, readdirSync} from 'node:fs';
import {basename, dirname, isAbsolute, join} from 'node:path';
import {sysPath} from './sysroot.js';
import type {DoctorContext} from './types.js';

export interface ConfDir {
  /** The file that names it, as on the machine (/etc/ld.so.conf.d/cuda-12-4.conf). */
  file: string;
  line: number;
  /** The directory as written. */
  dir: string;
}

function globToRegExp(pattern: string): RegExp {
  const body = pattern.replace(/[.+^${}()|\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]').replace(/\[!/g, '[^');
  return new RegExp(`^${body}$`);
}

/** glob() as ldconfig uses it for `include`: wildcards in the last component, sorted. */
function expandInclude(ctx: DoctorContext, pattern: string): string[] {
  const dir = dirname(pattern);
  const base = basename(pattern);
  if (!/[*?[]/.test(base)) return [pattern];
  let names: string[];
  try {
    names = readdirSync(sysPath(ctx, dir));
  } catch {
    return [];
  }
  const re = globToRegExp(base);
  return names.filter((n) => re.test(n)).sort().map((n) => join(dir, n));
}

/**
 * The directories /etc/ld.so.conf adds to the cache, following `include` lines (relative
 * patterns are relative to the including file's directory, as ldconfig does), with the
 * file and line of each. Files are read under the sysroot; names stay as on the machine.
 */
export function readLdSoConf(ctx: DoctorContext, file = '/etc/ld.so.conf', depth = 0, seen = new Set<string>()): ConfDir[] {
  if (depth > 8 || seen.has(file)) return [];
  seen.add(file);
  let text: string;
  try {
    text = readFileSync(sysPath(ctx, file), 'utf8').slice(0, 1_000_000);
  } catch {
    return [];
  }
  const out: ConfDir[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*/, '').trim();
    if (!line) return;
    const include = /^include\s+(.+)$/.exec(line);
    if (include) {
      for (const word of include[1]!.split(/\s+/)) {
        const pattern = isAbsolute(word) ? word : join(dirname(file), word);
        for (const f of expandInclude(ctx, pattern)) out.push(...readLdSoConf(ctx, f, depth + 1, seen));
      }
      return;
    }
    if (/^hwcap\s/.test(line)) return;
    // Several directories may share a line; "dir=libc6" is the old type suffix.
    for (const word of line.split(/[\s,:]+/)) {
      const dir = word.replace(/=.*$/, '');
      if (dir.startsWith('/')) out.push({file, line: i + 1, dir});
    }
  });
  return out;
}
