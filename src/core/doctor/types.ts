import type {StorePaths} from '../store/paths.js';

export type Severity = 'info' | 'warning' | 'error';

/**
 * One thing doctor found. `id` is stable (scripts match on it) and its prefix names the
 * section (`driver.`, `toolkit.`, `env.`, `pytorch.`, `loader.`, `conda.`).
 */
export interface Finding {
  id: string;
  severity: Severity;
  title: string;
  /** Paths and versions that show it, one per line. */
  evidence: string[];
  /** What to run or change; a cudaenv command where one exists. Null for plain facts. */
  fix: string | null;
}

/** What doctor reads the machine through; everything a test needs to construct a machine state. */
export interface DoctorContext {
  env: NodeJS.ProcessEnv;
  cwd: string;
  paths: StorePaths;
  /**
   * CUDAENV_SYSROOT: a directory prefixed to every system path doctor reads itself
   * (/proc, /sys, /etc/ld.so.cache, /etc/ld.so.conf*, /usr/local/cuda, driver library dirs).
   * Tests only; empty for the real machine.
   */
  sysroot: string;
  /** --python: the interpreter whose environment is examined. */
  python?: string;
}
