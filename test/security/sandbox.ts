/**
 * The security suite's machine: a private mount namespace (unshare -m) whose /etc, /usr/local,
 * /opt and /var/lib are overlays on the real ones (what a test writes lands in its own directory and
 * vanishes with the namespace), two real unprivileged users made there by useradd (alice, bob), the
 * real sudo with a sudoers rule limited to `cudaenv link *` and `cudaenv unlink *`, and the real
 * update-alternatives and ldconfig. The machine's real /etc, /usr/local/cuda and loader cache are
 * never touched: every write under them goes to the overlay's upper directory.
 *
 * A scenario is a bash script run as root inside the namespace; it calls `as_alice CMD...` (the
 * user's own shell environment, no sudo), `sudo_alice ARGS...` (alice running `sudo cudaenv ARGS`
 * as the rule allows) and `cudaenv_root ARGS...` (root's own shell), and prints what the test checks.
 */
import {spawnSync} from 'node:child_process';
import {chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {cliForNobody} from '../helpers/nobody.js';
import {IS_ROOT} from '../helpers/capabilities.js';

const have = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], {stdio: 'ignore'}).status === 0;

function overlayWorks(): boolean {
  if (!IS_ROOT || !have('unshare')) return false;
  const dir = mkdtempSync(join(tmpdir(), 'cudaenv-overlay-probe-'));
  try {
    mkdirSync(join(dir, 'up'));
    mkdirSync(join(dir, 'work'));
    return spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c',
      `mount -t overlay overlay -o lowerdir=/opt,upperdir=${dir}/up,workdir=${dir}/work /opt`], {stdio: 'ignore'}).status === 0;
  } finally {
    rmSync(dir, {recursive: true, force: true});
  }
}

const missing = ['sudo', 'useradd', 'setpriv', 'update-alternatives', 'ldconfig'].filter((c) => !have(c) && !spawnSync('test', ['-x', `/usr/sbin/${c}`]).status);
export const SANDBOX_OK = IS_ROOT && missing.length === 0 && overlayWorks();
export const SANDBOX_NEEDS = !IS_ROOT
  ? 'needs root (the security suite runs sudo, useradd and mounts in a private namespace)'
  : missing.length > 0 ? `needs ${missing.join(', ')} (apt-get install sudo passwd util-linux dpkg libc-bin)` : 'needs mount namespaces with overlayfs (unshare -m, mount -t overlay)';

export interface SandboxRun {
  status: number;
  stdout: string;
  stderr: string;
  /** The test's directory: homes under home/, the overlays' upper directories under up/. */
  dir: string;
}

const PRELUDE = String.raw`
set -u
T=$SANDBOX_DIR
for d in etc usrlocal opt varlib; do mkdir -p "$T/up/$d" "$T/work/$d"; done
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$T/up/etc,workdir=$T/work/etc" /etc || exit 90
mount -t overlay overlay -o "lowerdir=/usr/local,upperdir=$T/up/usrlocal,workdir=$T/work/usrlocal" /usr/local || exit 90
mount -t overlay overlay -o "lowerdir=/opt,upperdir=$T/up/opt,workdir=$T/work/opt" /opt || exit 90
mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$T/up/varlib,workdir=$T/work/varlib" /var/lib || exit 90
# The machine's own /usr/local/cuda (if any) is not the test's: start from none.
rm -f /usr/local/cuda /etc/ld.so.conf.d/*cuda* 2>/dev/null
rm -rf /var/lib/cudaenv
mkdir -p "$T/home"
useradd -M -d "$T/home/alice" -u 20001 -U -s /bin/sh alice >/dev/null 2>&1 || useradd -M -d "$T/home/alice" -U -s /bin/sh alice || exit 91
useradd -M -d "$T/home/bob" -u 20002 -U -s /bin/sh bob >/dev/null 2>&1 || useradd -M -d "$T/home/bob" -U -s /bin/sh bob || exit 91
mkdir -p "$T/home/alice" "$T/home/bob"
chown alice:alice "$T/home/alice"; chown bob:bob "$T/home/bob"
chmod 755 "$T/home/alice" "$T/home/bob"
CE=$SANDBOX_CLI
printf '%s\n' "alice ALL=(root) NOPASSWD: $CE link, $CE link *, $CE unlink, $CE unlink *" > /etc/sudoers.d/cudaenv-test
chmod 0440 /etc/sudoers.d/cudaenv-test
BASEPATH=/usr/bin:/bin:/usr/sbin:/sbin
as_alice() { setpriv --reuid=alice --regid=alice --init-groups env -i HOME="$T/home/alice" PATH="$BASEPATH" LANG=C.UTF-8 "$@"; }
as_bob() { setpriv --reuid=bob --regid=bob --init-groups env -i HOME="$T/home/bob" PATH="$BASEPATH" LANG=C.UTF-8 "$@"; }
sudo_alice() { as_alice sudo -n "$CE" "$@"; }
cudaenv_root() { env -i HOME=/root PATH="$BASEPATH" LANG=C.UTF-8 "$CE" "$@"; }
# A toolkit of the given owner at DIR: bin/nvcc, version.json, lib64 with a real library (the machine's libz).
make_toolkit() {
  local dir=$1 owner=$2 version=$3
  mkdir -p "$dir/bin" "$dir/lib64"
  printf '#!/bin/sh\necho "Cuda compilation tools, V%s"\n' "$version" > "$dir/bin/nvcc"
  chmod 755 "$dir/bin/nvcc"
  printf '{"cuda": {"name": "CUDA SDK", "version": "%s"}}\n' "$version" > "$dir/version.json"
  cp "$(ldconfig -p | awk '/libz\.so\.1 .*x86-64/ {print $NF; exit}')" "$dir/lib64/libz.so.1"
  chown -R "$owner" "$dir"
}
`;

/** Runs `script` as root in a fresh sandbox (see above); the directory is removed unless `keep`. */
export function runSandbox(script: string, options: {keep?: boolean; timeoutMs?: number} = {}): SandboxRun {
  const dir = mkdtempSync(join(tmpdir(), 'cudaenv-sec-'));
  // alice and bob reach their homes through it.
  chmodSync(dir, 0o755);
  const cli = join(dirname(dirname(cliForNobody())), 'bin', 'cudaenv');
  const file = join(dir, 'scenario.sh');
  writeFileSync(file, `${PRELUDE}\n${script}\n`);
  const r = spawnSync('unshare', ['-m', '--propagation', 'private', 'bash', file], {
    encoding: 'utf8',
    env: {PATH: '/usr/bin:/bin:/usr/sbin:/sbin', LANG: 'C.UTF-8', SANDBOX_DIR: dir, SANDBOX_CLI: cli},
    timeout: options.timeoutMs ?? 120_000,
  });
  if (!options.keep) rmSync(dir, {recursive: true, force: true});
  if (r.status === 90 || r.status === 91) throw new Error(`the sandbox could not be set up (exit ${r.status}): ${r.stderr}`);
  return {status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr, dir};
}
