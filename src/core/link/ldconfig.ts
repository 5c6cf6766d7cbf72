import {spawnSync} from 'node:child_process';
import {readFileSync, readdirSync} from 'node:fs';
import {basename, dirname, isAbsolute, join, resolve} from 'node:path';

/**
 * The loader cache side of a link change: which ld.so.conf files name directories under the
 * target (their cache entries go stale when the link moves), and the ldconfig that refreshes
 * it. The conf and cache paths are injectable (CUDAENV_LDSO_CONF / CUDAENV_LDSO_CACHE), so
 * tests run the real ldconfig on a private cache (`ldconfig -C FILE -f CONF`).
 */
export interface LdconfigOptions {
  conf: string;
  /** Undefined: the system cache /etc/ld.so.cache. */
  cache?: string;
}

export function ldconfigOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LdconfigOptions {
  return {
    conf: env.CUDAENV_LDSO_CONF ? resolve(env.CUDAENV_LDSO_CONF) : '/etc/ld.so.conf',
    cache: env.CUDAENV_LDSO_CACHE ? resolve(env.CUDAENV_LDSO_CACHE) : undefined,
  };
}

export function ldconfigArgv(options: LdconfigOptions): string[] {
  const argv = ['ldconfig'];
  if (options.cache) argv.push('-C', options.cache);
  if (options.conf !== '/etc/ld.so.conf') argv.push('-f', options.conf);
  return argv;
}

/** Files of the configuration (the main file and what its `include` lines name) with a line under `target`. */
export function confFilesPointingInto(options: LdconfigOptions, target: string): string[] {
  const found: string[] = [];
  const seen = new Set<string>();
  const visit = (file: string, depth: number) => {
    if (seen.has(file) || depth > 8) return;
    seen.add(file);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return; // a missing or unreadable conf file is what ldconfig itself skips
    }
    let hit = false;
    for (const raw of text.split('\n')) {
      const line = raw.replace(/#.*/, '').trim();
      if (line === '') continue;
      const include = /^include\s+(.+)$/.exec(line);
      if (include) {
        for (const pattern of include[1].split(/\s+/)) {
          for (const f of expandGlob(isAbsolute(pattern) ? pattern : join(dirname(file), pattern))) visit(f, depth + 1);
        }
        continue;
      }
      // A directory entry may carry a hwcap/type suffix ("dir=libc6"); ld.so.conf allows
      // several directories on one line separated by blanks, commas or colons.
      for (const entry of line.split(/[\s,:]+/)) {
        const dir = entry.replace(/=.*$/, '');
        if (dir === target || dir.startsWith(`${target}/`)) hit = true;
      }
    }
    if (hit) found.push(file);
  };
  visit(options.conf, 0);
  return found;
}

/** `*`/`?` in the last path component, as ld.so.conf's include lines use them; sorted like glob(3). */
function expandGlob(pattern: string): string[] {
  const dir = dirname(pattern);
  const base = basename(pattern);
  if (!/[*?[]/.test(base)) return [pattern];
  const re = new RegExp(`^${base.replace(/[.+^${}()|\\]/g, '\\$&').replaceAll('*', '[^/]*').replaceAll('?', '[^/]')}$`);
  try {
    return readdirSync(dir).filter((n) => !n.startsWith('.') && re.test(n)).sort().map((n) => join(dir, n));
  } catch {
    return [];
  }
}

export interface LdconfigRun {
  command: string[];
  ok: boolean;
  message: string;
}

export function runLdconfig(options: LdconfigOptions): LdconfigRun {
  const command = ldconfigArgv(options);
  let r = spawnSync(command[0], command.slice(1), {encoding: 'utf8'});
  // /sbin is often missing from PATH (sudo's secure_path keeps it, a login shell may not).
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') r = spawnSync('/sbin/ldconfig', command.slice(1), {encoding: 'utf8'});
  if (r.error) return {command, ok: false, message: r.error.message};
  return {command, ok: r.status === 0, message: (r.stderr || '').trim()};
}
