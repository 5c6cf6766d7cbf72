import {spawnSync} from 'node:child_process';
import {existsSync, mkdtempSync, realpathSync, rmdirSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join, resolve} from 'node:path';
import {CudaenvError} from '../errors.js';
import {runForeground} from '../system/run-child.js';
import {inspectTarget} from './swap.js';

/** Where the setup's tools come from (CMD's PATH starts with the toolkit's bin/). */
const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * `cudaenv exec --isolate`: CMD runs in a private mount namespace where the mount point
 * (/usr/local/cuda) shows the project's version; every other process keeps the system's.
 *
 * A bind mount needs an existing mount point and follows symlinks, so:
 * - a real directory is bound over directly;
 * - a symlink (the usual /usr/local/cuda -> cuda-X.Y) or nothing: binding through the link
 *   would also hide cuda-X.Y, so the parent (/usr/local) gets a tmpfs in the namespace on which
 *   every other entry is recreated (directories and files bind-mounted from the original,
 *   symlinks copied) and the mount point is a fresh directory with the version bound on it.
 *
 * The setup is a fixed sh script; the version, paths and CMD reach it only as arguments
 * ("$1" ... "$@"), never inside the script text. As a non-root user the namespace comes with
 * a user namespace mapping the user to root (needed to mount); a nested one then maps root
 * back to the user's own ids before CMD runs, so CMD runs as the user, not as a fake root.
 */
const SETUP = `set -e
fail() { printf 'cudaenv: --isolate: %s\\n' "$1" >&2; exit 125; }
src=$1 target=$2 stage=$3 mode=$4 uid=$5 gid=$6
shift 6
# The setup runs as (namespace) root: its tools come from the system, never from the toolkit's
# bin/ that leads CMD's PATH; CMD gets that PATH back when it starts.
cmdpath=$PATH
PATH=${SAFE_PATH}
export PATH
if [ "$mode" = dir ]; then
  mount --bind "$src" "$target" || fail "cannot bind $src onto $target"
else
  parent=\${target%/*} name=\${target##*/}
  mount --rbind "$parent" "$stage" || fail "cannot bind $parent aside"
  mount -t tmpfs -o "mode=$(stat -c %a "$stage")" cudaenv-isolate "$parent" || fail "cannot mount a tmpfs on $parent"
  for e in "$stage"/* "$stage"/.[!.]* "$stage"/..?*; do
    [ -e "$e" ] || [ -L "$e" ] || continue
    n=\${e##*/}
    [ "$n" = "$name" ] && continue
    if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$parent/$n"
    elif [ -d "$e" ]; then mkdir "$parent/$n" && mount --rbind "$e" "$parent/$n"
    else : > "$parent/$n" && mount --bind "$e" "$parent/$n"
    fi || fail "cannot recreate $parent/$n"
  done
  { mkdir "$parent/$name" && mount --bind "$src" "$parent/$name"; } || fail "cannot bind $src onto $target"
  umount -l "$stage" 2>/dev/null || :
fi
unshare=$(command -v unshare)
PATH=$cmdpath
export PATH
if [ -n "$uid" ]; then exec "$unshare" --user --map-user="$uid" --map-group="$gid" -- "$@"; fi
exec "$@"`;

export interface IsolateOptions {
  /** The version directory to show at the mount point. */
  versionDir: string;
  /** Default /usr/local/cuda (tests use a temporary one). */
  mountpoint?: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

export interface IsolatePlan {
  argv: string[];
  mode: 'dir' | 'overlay';
  /** A temporary directory the original parent is bound on during setup (overlay mode). */
  stage?: string;
}

const isRoot = () => process.getuid?.() === 0;


/** A system program by absolute path, so that CMD's PATH (the toolkit's bin/ first) cannot provide it. */
function systemTool(name: string): string {
  for (const dir of SAFE_PATH.split(':')) {
    if (existsSync(`${dir}/${name}`)) return `${dir}/${name}`;
  }
  return name;
}

export function planIsolate(options: IsolateOptions, stage = ''): IsolatePlan {
  const mountpoint = resolve(options.mountpoint ?? '/usr/local/cuda');
  const state = inspectTarget(mountpoint);
  if (state.kind === 'file' || state.kind === 'other') {
    throw new CudaenvError(`--isolate: ${mountpoint} is not a directory or link; cannot mount a toolkit there`, {code: 'isolate-failed'});
  }
  const mode = state.kind === 'directory' ? 'dir' : 'overlay';
  if (mode === 'overlay' && dirname(mountpoint) === '/') {
    throw new CudaenvError(`--isolate: ${mountpoint} sits directly under /, which cannot be overlaid`, {code: 'isolate-failed'});
  }
  if (mode === 'overlay' && inspectTarget(dirname(mountpoint)).kind !== 'directory') {
    throw new CudaenvError(`--isolate: ${dirname(mountpoint)} does not exist, so there is nowhere to mount ${mountpoint}`, {
      hint: `Create it (sudo mkdir -p ${dirname(mountpoint)}), or use \`sudo cudaenv link\` instead.`,
      code: 'isolate-failed',
    });
  }
  const src = realpathSync(options.versionDir);
  const ids = isRoot() ? ['', ''] : [String(process.getuid!()), String(process.getgid!())];
  const unshare = isRoot() ? [systemTool('unshare'), '--mount', '--propagation', 'private'] : [systemTool('unshare'), '--user', '--map-root-user', '--mount', '--propagation', 'private'];
  return {
    mode,
    stage: mode === 'overlay' ? stage : undefined,
    argv: [...unshare, '--', systemTool('sh'), '-c', SETUP, 'cudaenv-isolate', src, mountpoint, stage, mode, ...ids, options.command, ...options.args],
  };
}

/** Whether this process may create the namespace; the reason when not. */
export function probeNamespaces(): {ok: true} | {ok: false; reason: string} {
  const argv = isRoot() ? ['unshare', '--mount', 'true'] : ['unshare', '--user', '--map-root-user', '--mount', 'true'];
  const r = spawnSync(argv[0], argv.slice(1), {encoding: 'utf8'});
  if (r.error) return {ok: false, reason: `${argv[0]}: ${r.error.message} (util-linux's unshare is needed)`};
  if (r.status !== 0) return {ok: false, reason: (r.stderr || `unshare exited with ${r.status}`).trim().split('\n')[0]};
  return {ok: true};
}

/** Runs CMD isolated; resolves to its exit status (128 + signal when killed). */
export async function runIsolated(options: IsolateOptions, spec: string): Promise<number> {
  const probe = probeNamespaces();
  if (!probe.ok) {
    const why = isRoot() ? 'cannot create a mount namespace' : 'unprivileged user namespaces are disabled on this machine';
    throw new CudaenvError(`--isolate: ${why} (${probe.reason}); use \`sudo cudaenv link ${spec}\` to switch /usr/local/cuda machine-wide instead`, {code: 'isolate-unavailable'});
  }
  const plan0 = planIsolate(options);
  const stage = plan0.mode === 'overlay' ? mkdtempSync(join(tmpdir(), 'cudaenv-isolate-')) : '';
  try {
    const plan = planIsolate(options, stage);
    return await runForeground(plan.argv[0], plan.argv.slice(1), options.env);
  } finally {
    if (stage) {
      try {
        rmdirSync(stage);
      } catch {
        // still a mount point in a namespace a background process keeps alive: left for tmp cleaning
      }
    }
  }
}
