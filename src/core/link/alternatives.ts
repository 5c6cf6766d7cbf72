import {spawnSync} from 'node:child_process';
import {basename, dirname, resolve} from 'node:path';
import {CudaenvError} from '../errors.js';

/**
 * update-alternatives, as NVIDIA's .deb/.rpm packages use it for /usr/local/cuda
 * (groups `cuda` and `cuda-<major>`). The directories are injectable so tests run the real
 * tool against a private tree; CUDAENV_ALTDIR / CUDAENV_ADMINDIR / CUDAENV_ALTLOG set them.
 */
export interface AltOptions {
  altdir: string;
  admindir?: string;
  log?: string;
}

export interface AltGroup {
  name: string;
  link: string;
  status: 'auto' | 'manual';
  value: string | null;
  alternatives: Array<{path: string; priority: number}>;
}

export function altOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): AltOptions {
  return {
    altdir: env.CUDAENV_ALTDIR ? resolve(env.CUDAENV_ALTDIR) : '/etc/alternatives',
    admindir: env.CUDAENV_ADMINDIR ? resolve(env.CUDAENV_ADMINDIR) : undefined,
    log: env.CUDAENV_ALTLOG ? resolve(env.CUDAENV_ALTLOG) : undefined,
  };
}

/** The update-alternatives command line for `args`, with the private directories if any. */
export function altArgv(options: AltOptions, args: string[]): string[] {
  const argv = ['update-alternatives'];
  if (options.altdir !== '/etc/alternatives') argv.push('--altdir', options.altdir);
  if (options.admindir) argv.push('--admindir', options.admindir);
  if (options.log) argv.push('--log', options.log);
  return [...argv, ...args];
}

/** The group a link value names when it points into the alternatives directory. */
export function groupNameOf(linkValue: string, targetDir: string, options: AltOptions): string | undefined {
  const abs = resolve(targetDir, linkValue);
  return dirname(abs) === resolve(options.altdir) ? basename(abs) : undefined;
}

export class AltCommandError extends CudaenvError {
  constructor(readonly argv: string[], readonly status: number | null, readonly stderr: string) {
    super(`${argv.join(' ')} failed${status === null ? '' : ` (exit ${status})`}: ${stderr.trim() || 'no message'}`, {code: 'alternatives-failed'});
  }

  get permissionDenied(): boolean {
    return /permission denied|read-only file system|operation not permitted/i.test(this.stderr);
  }
}

export function runAlt(options: AltOptions, args: string[]): string {
  const argv = altArgv(options, args);
  const r = spawnSync(argv[0], argv.slice(1), {encoding: 'utf8'});
  if (r.error) {
    throw new CudaenvError(`cannot run update-alternatives: ${r.error.message}`, {
      hint: 'The target is managed by update-alternatives, which must be installed (Debian: dpkg; RPM: chkconfig/alternatives).',
    });
  }
  if (r.status !== 0) throw new AltCommandError(argv, r.status, r.stderr);
  return r.stdout;
}

/** The group's state from `--query`, or undefined when no such group exists. */
export function queryGroup(options: AltOptions, name: string): AltGroup | undefined {
  let out: string;
  try {
    out = runAlt(options, ['--query', name]);
  } catch (error) {
    if (error instanceof AltCommandError && /no alternatives for/i.test(error.stderr)) return undefined;
    throw error;
  }
  return parseQuery(out);
}

/** Parses `update-alternatives --query` (RFC 822-style stanzas: the group, then one per alternative). */
export function parseQuery(text: string): AltGroup {
  const stanzas = text.split(/\n\s*\n/).map((block) => {
    const fields = new Map<string, string>();
    for (const line of block.split('\n')) {
      const m = /^([A-Za-z-]+):\s?(.*)$/.exec(line);
      if (m) fields.set(m[1], m[2]);
    }
    return fields;
  });
  const head = stanzas[0] ?? new Map<string, string>();
  const value = head.get('Value');
  return {
    name: head.get('Name') ?? '',
    link: head.get('Link') ?? '',
    status: head.get('Status') === 'manual' ? 'manual' : 'auto',
    value: value && value !== 'none' ? value : null,
    alternatives: stanzas.slice(1).filter((s) => s.has('Alternative')).map((s) => ({
      path: s.get('Alternative')!,
      priority: Number(s.get('Priority') ?? '0'),
    })),
  };
}

/**
 * Makes `path` an alternative of the group (priority 0: it never wins auto mode by itself)
 * and selects it with --set, which puts the group in manual mode so that a later package
 * upgrade does not move the link. Returns whether cudaenv added the alternative.
 */
export function selectAlternative(options: AltOptions, group: AltGroup, path: string): boolean {
  const known = group.alternatives.some((a) => a.path === path);
  if (!known) runAlt(options, ['--install', group.link, group.name, path, '0']);
  runAlt(options, ['--set', group.name, path]);
  return !known;
}

/** Puts a group back: auto mode, or the manual choice it had (when that alternative still exists). */
export function restoreGroup(options: AltOptions, before: {name: string; status: 'auto' | 'manual'; value: string | null}): void {
  const now = queryGroup(options, before.name);
  if (!now) return;
  if (before.status === 'manual' && before.value && now.alternatives.some((a) => a.path === before.value)) {
    runAlt(options, ['--set', before.name, before.value]);
  } else {
    runAlt(options, ['--auto', before.name]);
  }
}

export function removeAlternative(options: AltOptions, group: string, path: string): void {
  const now = queryGroup(options, group);
  if (!now || !now.alternatives.some((a) => a.path === path)) return;
  runAlt(options, ['--remove', group, path]);
}
