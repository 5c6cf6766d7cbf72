// Runs once, in Jest's parent process, before any worker starts: what it sets in process.env is
// what every test file and every process a test starts inherits. The suite must not depend on the
// caller's environment (a cudaenv user has CUDAENV_DIR, CUDA_HOME, LD_LIBRARY_PATH... exported),
// so everything that changes what cudaenv, the shells, gcc or the loader do is removed here, and
// HOME is a fresh directory: no test can read or write the user's ~/.cudaenv, rc files or config.
import {chmodSync, mkdtempSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {join} from 'node:path';

/** Test-only knobs the suite itself reads (see docs/testing.md); never product settings. */
const KEEP = new Set(['CUDAENV_ELF_SWEEP', 'CUDAENV_ELF_SWEEP_DIR', 'CUDAENV_FUZZ_SEED', 'CUDAENV_FUZZ_CASES',
  // whether the Ubuntu-only fixtures were asked for: their skips are optional only where it is unset
  'CUDAENV_UBUNTU_MIRROR']);

const DROP = [
  // cudaenv's own state and settings, and what a switched shell exports
  /^_?CUDAENV_/, /^CUDA_(HOME|PATH|VERSION)$/,
  // the loader and the compiler
  /^LD_(LIBRARY_PATH|PRELOAD|AUDIT)$/, /^GLIBC_TUNABLES$/, /^(LIBRARY_PATH|CPATH|C_INCLUDE_PATH|CPLUS_INCLUDE_PATH)$/,
  // Python environments the doctor and the conda hook look at
  /^CONDA_/, /^_CE_/, /^VIRTUAL_ENV$/, /^PYTHON(HOME|PATH)$/,
  // sudo changes whose store the CLI uses
  /^SUDO_(USER|UID|GID|COMMAND)$/,
  // output: jest sets NODE_ENV=test, which makes oclif look for TypeScript sources at every start
  // (slower, and not how users run it); colours and debug lines would change what tests compare
  /^NODE_ENV$/, /^FORCE_COLOR$/, /^DEBUG$/,
  // where the user's config, data and shell start-up files are: derived from the new HOME
  /^XDG_(CONFIG|DATA|CACHE|STATE|RUNTIME)_(HOME|DIR)$/, /^ZDOTDIR$/, /^ENV$/, /^BASH_ENV$/,
  // a proxy of the caller's network would be asked for the tests' loopback mirrors
  /^(https?|all|no)_proxy$/i,
  // messages of ldd, readelf and the shells are compared as text
  /^LC_/, /^LANGUAGE$/,
];

export default function globalSetup() {
  const env = process.env;
  for (const key of Object.keys(env)) {
    if (!KEEP.has(key) && DROP.some((re) => re.test(key))) delete env[key];
  }
  env.LANG = 'C.UTF-8';
  // A CUDA toolkit or a cudaenv shims directory on the caller's PATH would answer `nvcc`.
  env.PATH = (env.PATH ?? '/usr/bin:/bin').split(':')
    .filter((d) => d !== '' && !/\.cudaenv|\/cudaenv\/shims|\/cuda(-[\d.]+)?\/bin/.test(d)).join(':');
  const home = mkdtempSync(join(tmpdir(), 'cudaenv-test-home-'));
  chmodSync(home, 0o755); // tests that run the CLI as nobody may look at it
  globalThis.__cudaenvTestHome = home;
  env.HOME = home;
  // What a test keeps for the whole run (the CLI copied where user nobody can read it): removed by
  // the teardown, since a worker Jest ends runs no exit handler (such copies once filled CI's disk).
  const scratch = mkdtempSync(join(tmpdir(), 'cudaenv-test-run-'));
  chmodSync(scratch, 0o755);
  globalThis.__cudaenvTestScratch = scratch;
  env.JEST_CUDAENV_SCRATCH = scratch;
}
