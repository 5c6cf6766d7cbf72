/**
 * What this machine can do for the tests, probed once per test file, synchronously (so that
 * testIf/describeIf can decide at collection time: a test body can never skip itself).
 * The reasons are the ones the summary prints and the CI policy (test/helpers/ci-policy.cjs) judges.
 */
import {spawnSync} from 'node:child_process';
import {existsSync, mkdtempSync, rmdirSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';
import {REPO_ROOT} from './cli.js';

export function have(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v "$1" || test -x "/usr/sbin/$1" || test -x "/sbin/$1"`, 'sh', tool], {stdio: 'ignore'}).status === 0;
}

export const IS_ROOT = process.getuid?.() === 0;

/** A private mount namespace where a bind mount works (as root: unshare -m). */
export const CAN_MOUNT_NAMESPACE = IS_ROOT && spawnSync('unshare', ['-m', 'sh', '-c', 'mount --bind / / 2>/dev/null || mount --bind /tmp /tmp'], {stdio: 'ignore'}).status === 0;

/** A real tmpfs can be mounted here (root, and a kernel/container that allows it). */
export const CAN_MOUNT_TMPFS = IS_ROOT && (() => {
  const at = mkdtempSync(join(tmpdir(), 'cudaenv-tmpfs-probe-'));
  try {
    return spawnSync('sh', ['-c', 'mount -t tmpfs -o size=64k tmpfs "$1" && umount "$1"', 'sh', at], {stdio: 'ignore'}).status === 0;
  } finally {
    rmdirSync(at);
  }
})();

/** strace can follow a process tree (ptrace is allowed). */
export const CAN_PTRACE = spawnSync('strace', ['-f', '-o', '/dev/null', 'true'], {stdio: 'ignore'}).status === 0;

/** The real CUDA libraries test/fixtures/fetch-cuda-libs.sh unpacks (Debian bookworm 11.8, trixie 12.4). */
export const DOWNLOADED = join(REPO_ROOT, 'test', 'fixtures', 'downloaded');
/** Debian trixie's cuobjdump (CUDA 12.4, nvidia-cuda-toolkit, fetch-cuda-libs.sh), the GPU-code oracle; nvdisasm lies beside it. */
export const DEBIAN_CUOBJDUMP = join(DOWNLOADED, 'trixie-toolkit', 'usr', 'bin', 'cuobjdump');
export const HAVE_REAL_CUDA_LIBS = ['bookworm', 'trixie'].every((suite) => existsSync(join(DOWNLOADED, suite, 'usr', 'lib', 'x86_64-linux-gnu')));

/**
 * The real executable of the python3 on PATH (sys.executable: an ELF file, where PATH may hold a
 * pyenv shim script), or null. Never a fixed /usr/bin/python3: machines differ.
 */
export const PYTHON_EXE: string | null = (() => {
  const r = spawnSync('python3', ['-c', 'import os, sys; print(os.path.realpath(sys.executable))'], {encoding: 'utf8'});
  const exe = r.status === 0 ? r.stdout.trim() : '';
  return exe && existsSync(exe) ? exe : null;
})();

/** The loader's $PLATFORM on this CPU (AT_PLATFORM: x86_64, or haswell/xeon_phi on some Intel CPUs). */
export function atPlatform(): string {
  const r = spawnSync('/bin/true', [], {env: {LD_SHOW_AUXV: '1'}, encoding: 'utf8'});
  const m = /^AT_PLATFORM:\s*(\S+)/m.exec(r.stdout ?? '');
  if (!m) throw new Error(`LD_SHOW_AUXV=1 /bin/true printed no AT_PLATFORM: ${r.stdout}${r.stderr}`);
  return m[1];
}

/** Skip reasons, one wording per cause (the CI policy matches on them). */
export const NEEDS = {
  root: 'needs root',
  mountNamespace: 'needs root and a mount namespace (unshare -m, mount --bind)',
  tmpfs: 'needs root and permission to mount a tmpfs',
  ptrace: 'needs strace and ptrace (strace -f)',
  realCudaLibs: 'needs the real CUDA libraries: bash test/fixtures/fetch-cuda-libs.sh',
  tool: (tool: string, pkg = tool): string => `needs ${tool} (apt-get install ${pkg})`,
  /** Only a developer's machine with NVIDIA's toolkit installed has this: allowed to skip in CI. */
  devToolkit: (path: string): string => `optional: no real CUDA toolkit at ${path}`,
  /**
   * What only Ubuntu's archive has (no current Debian release carries that release line):
   * test/fixtures/fetch-cuda-libs.sh fetches it only where CUDAENV_UBUNTU_MIRROR names that archive.
   * Unset, the skip is optional (allowed in CI); set, the fixture is required like any other.
   */
  ubuntuOnly: (what: string): string => process.env.CUDAENV_UBUNTU_MIRROR
    ? `needs ${what}: bash test/fixtures/fetch-cuda-libs.sh (CUDAENV_UBUNTU_MIRROR is set)`
    : `optional: another distribution's archive is not named: ${what} is Ubuntu's (CUDAENV_UBUNTU_MIRROR=URI bash test/fixtures/fetch-cuda-libs.sh)`,
} as const;

/** The host's glibc release ([major, minor]: `getconf GNU_LIBC_VERSION`), or null off glibc. */
export const HOST_GLIBC: [number, number] | null = (() => {
  const m = /(\d+)\.(\d+)/.exec(spawnSync('getconf', ['GNU_LIBC_VERSION'], {encoding: 'utf8'}).stdout ?? '');
  return m ? [Number(m[1]), Number(m[2])] : null;
})();

/** Whether the host's glibc is this release or later (rules that came with a release are tested from it). */
export function hostGlibcAtLeast(major: number, minor: number): boolean {
  return HOST_GLIBC !== null && (HOST_GLIBC[0] > major || (HOST_GLIBC[0] === major && HOST_GLIBC[1] >= minor));
}
