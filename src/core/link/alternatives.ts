import {spawnSync} from 'node:child_process';
import {readFileSync, readlinkSync} from 'node:fs';
import {basename, dirname, join, resolve} from 'node:path';
import {CudaenvError, isErrno} from '../errors.js';

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

/**
 * Which update-alternatives this machine has: dpkg's (Debian, Ubuntu), or Red Hat's `alternatives`
 * from chkconfig (RHEL, Rocky, Alma, Fedora, SUSE's is dpkg's), which has no --query and no --log
 * and keeps its state in /var/lib/alternatives in its own format. Asked once per PATH.
 */
export type AltFlavour = 'dpkg' | 'chkconfig';
const flavours = new Map<string, AltFlavour>();

export function altFlavour(options: AltOptions): AltFlavour {
  const key = `${process.env.PATH ?? ''}\0${options.altdir}\0${options.admindir ?? ''}`;
  let flavour = flavours.get(key);
  if (!flavour) {
    const dirs = [...(options.altdir !== '/etc/alternatives' ? ['--altdir', options.altdir] : []), ...(options.admindir ? ['--admindir', options.admindir] : [])];
    const r = spawnSync('update-alternatives', [...dirs, '--version'], {encoding: 'utf8', env: {...process.env, LC_ALL: 'C'}});
    // chkconfig's prints "alternatives version 1.24" (or its usage, which starts the same way).
    flavour = /^alternatives version /m.test(`${r.stdout ?? ''}`) ? 'chkconfig' : 'dpkg';
    flavours.set(key, flavour);
  }
  return flavour;
}

/** The update-alternatives command line for `args`, with the private directories if any. */
export function altArgv(options: AltOptions, args: string[]): string[] {
  const argv = ['update-alternatives'];
  if (options.altdir !== '/etc/alternatives') argv.push('--altdir', options.altdir);
  if (options.admindir) argv.push('--admindir', options.admindir);
  // Red Hat's alternatives logs nothing and refuses the option.
  if (options.log && altFlavour(options) === 'dpkg') argv.push('--log', options.log);
  return [...argv, ...args];
}

/** The group a link value names when it points into the alternatives directory. */
export function groupNameOf(linkValue: string, targetDir: string, options: AltOptions): string | undefined {
  const abs = resolve(targetDir, linkValue);
  return dirname(abs) === resolve(options.altdir) ? basename(abs) : undefined;
}

export class AltCommandError extends CudaenvError {
  constructor(readonly argv: string[], readonly status: number | null, readonly stderr: string, stdout = '') {
    // Red Hat's alternatives prints its usage (a refused option) on standard output.
    const said = stderr.trim() || stdout.trim().split('\n')[0] || 'no message';
    super(`${argv.join(' ')} failed${status === null ? '' : ` (exit ${status})`}: ${said}`, {code: 'alternatives-failed'});
  }

  get permissionDenied(): boolean {
    return /permission denied|read-only file system|operation not permitted/i.test(this.stderr);
  }
}

export function runAlt(options: AltOptions, args: string[]): string {
  const argv = altArgv(options, args);
  const r = spawnSync(argv[0], argv.slice(1), {encoding: 'utf8', env: process.env});
  if (r.error) {
    throw new CudaenvError(`cannot run update-alternatives: ${r.error.message}`, {
      hint: 'The target is managed by update-alternatives, which must be installed (Debian: dpkg; RPM: chkconfig/alternatives).',
    });
  }
  if (r.status !== 0) throw new AltCommandError(argv, r.status, r.stderr, r.stdout);
  return r.stdout;
}

/** The group's state (dpkg's `--query`, or Red Hat's state file), or undefined when no such group exists. */
export function queryGroup(options: AltOptions, name: string): AltGroup | undefined {
  if (altFlavour(options) === 'chkconfig') return readChkconfigGroup(options, name);
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

/**
 * A group as Red Hat's alternatives reads it (alternatives.c readConfig), from ADMINDIR/NAME: the
 * mode, the primary link, follower pairs up to an empty line, then per alternative its path, a
 * "[@family@]priority[ initscript]" line and one line per follower; the current choice is where
 * ALTDIR/NAME points, and an auto group whose link is not the best alternative counts as manual.
 * Read directly: that tool has no --query, and its --display leaves out the primary link.
 */
export function readChkconfigGroup(options: AltOptions, name: string): AltGroup | undefined {
  const admindir = options.admindir ?? '/var/lib/alternatives';
  const file = join(admindir, name);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if (isErrno(error) && error.code === 'ENOENT') return undefined;
    throw new CudaenvError(`cannot read the alternatives state ${file}: ${error instanceof Error ? error.message : String(error)}`, {code: 'alternatives-failed'});
  }
  const bad = (what: string) => new CudaenvError(`the alternatives state ${file} is malformed: ${what}`, {
    code: 'alternatives-failed', hint: `Check it with: alternatives --display ${name}`,
  });
  const lines = text.split('\n').map((l) => l.replace(/^\s+/, ''));
  if (text.endsWith('\n')) lines.pop();
  let i = 0;
  const mode = lines[i++];
  if (mode !== 'auto' && mode !== 'manual') throw bad(`line 1 is ${JSON.stringify(mode ?? '')}, not auto or manual`);
  const link = lines[i++];
  if (!link?.startsWith('/')) throw bad('line 2 is not the primary link');
  let followers = 0;
  while (i < lines.length && lines[i] !== '') {
    if (!lines[i + 1]) throw bad(`follower ${lines[i]} has no link`);
    followers++;
    i += 2;
  }
  if (i >= lines.length) throw bad('it ends before the alternatives');
  i++;
  const alternatives: AltGroup['alternatives'] = [];
  let best = 0;
  while (i < lines.length && lines[i] !== '') {
    const path = lines[i++];
    if (!path.startsWith('/')) throw bad(`${JSON.stringify(path)} is not the path of an alternative`);
    // strtol(line, &end, 0): a sign, then hexadecimal after 0x, octal after 0, else decimal.
    const m = /^(?:@[^@]+@)?\s*([+-]?)(?:0x([0-9a-f]+)|0([0-7]*)|([1-9]\d*))/i.exec(lines[i++] ?? '');
    if (!m) throw bad(`the alternative ${path} has no numeric priority`);
    const magnitude = m[2] !== undefined ? Number.parseInt(m[2], 16) : m[3] !== undefined ? Number.parseInt(m[3] || '0', 8) : Number.parseInt(m[4], 10);
    alternatives.push({path, priority: m[1] === '-' ? -magnitude : magnitude});
    if (alternatives[alternatives.length - 1].priority > alternatives[best].priority) best = alternatives.length - 1;
    i += followers;
  }
  let current: string | null = null;
  try {
    current = readlinkSync(join(options.altdir, name));
  } catch {
    // No link: no choice in effect (ld would find nothing there either).
  }
  const chosen = alternatives.findIndex((a) => a.path === current);
  const status = chosen < 0 || (mode === 'auto' && chosen !== best) ? 'manual' : mode;
  return {name, link, status, value: chosen < 0 ? null : alternatives[chosen].path, alternatives};
}
