import type {ProblemKind} from '../report-types.js';
import type {Edge, LoadedObject} from '../search/loader-process.js';
import type {SymbolRef} from './symbols.js';

/**
 * What would fail in a modelled process (elf-loader-spec.md §3): missing libraries, version
 * nodes the chosen library does not define, and references nothing in the global scope binds.
 */
export interface Finding {
  kind: ProblemKind;
  object: LoadedObject;
  /** The DT_NEEDED / vn_file name involved (null for unversioned symbols). */
  library: string | null;
  version: string | null;
  symbol: string | null;
  /** The loaded object the requirement was checked against. */
  provider: LoadedObject | null;
  /** The edge that loaded the provider (or failed to). */
  edge: Edge | null;
  /** Set for symbol findings. */
  ref?: SymbolRef;
  /** For 'loader-abort': the assertion and its cause. */
  reason?: string;
  /** With --exe, for a symbol finding of an object the program starts with: when the reference is bound (Problem.when). */
  when?: 'start' | 'first-call';
  /** A program's copy relocation whose definition nothing outside the program provides. */
  copy?: boolean;
  /** The rank of the relocation that meets it, where the object's looked-up names do not tell (copies, static TLS). */
  rank?: number;
  /**
   * For 'static-tls': the object whose initial-exec relocation needs `object`'s TLS block at a static
   * offset, the bytes left in the block, how much more surplus would do, and the surplus settings.
   */
  staticTls?: {referrer: LoadedObject; free: number; shortfall: number; surplus: number; optional: number; tunable: boolean; blockAlign: number};
  /** For 'loader-abort': the filtees that make ld.so crash (walking its dependencies without end). */
  filterLoop?: LoadedObject[];
  /**
   * For 'executable-stack': 'dlopen' when a dlopen may not make the stack executable (glibc 2.41),
   * 'forbidden' when GLIBC_TUNABLES=glibc.rtld.execstack=0 refuses every executable stack.
   */
  execStack?: 'dlopen' | 'forbidden';
  /**
   * For 'undefined-symbol' under glibc before 2.30: the lookup stopped at `provider`, the library
   * the version names, which lacks the symbol; `later` defines it further on in the scope (what
   * 2.30 and later bind), `weak` the reference is weak (./version-file-stop.ts).
   */
  versionFileStop?: {later: LoadedObject | null; weak: boolean};
}
