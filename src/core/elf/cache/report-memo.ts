import {readFileSync, realpathSync, type Stats} from 'node:fs';
import {join} from 'node:path';
import {currentValue, identity, inputKey, statOrNull, type InputKind} from './inputs.js';
import {realpathIn} from '../read/machine/sysroot.js';
import {codeStamp, keyHash, onNetworkFs, prune, SETTLE_MS} from './verdict-cache.js';
import {linksHold, proveLinks, type LinkProof} from './link-proof.js';
import {writeFileSafely} from '../../safe-fs/index.js';

/**
 * What a whole `cudaenv check` printed, kept in $CUDAENV_DIR/cache/check/reports/ with every fact
 * it rested on: each file's verdict (the facts the verdict cache kept for it) and every question
 * the report itself asked of the file system after that (the merge's identities, the realpaths of
 * the notes of libraries found elsewhere, the image's names of dangling paths). The same request
 * of the same listing answers from it while every one of those facts reads the same; a cached
 * check of the PyTorch image otherwise parsed 790 KB of verdicts, merged 129 objects and 622
 * problems and wrote its text again (20 of its 60 ms). Only what the verdict cache keeps is kept:
 * never a report with a failing problem, nor one resting on a file changed within SETTLE_MS or on a
 * network file system.
 */

/** What the command prints. */
export interface MemoAnswer {
  text: string;
  exitCode: 0 | 1;
  warnings: string[];
}

type Fact = [InputKind, string, string];

interface MemoFile {
  format: number;
  /** The request the file is named by and the code that answered it, compared before anything of the file is used. */
  request: string;
  code: string;
  key: string;
  facts: Fact[];
  links?: LinkProof;
  answer: MemoAnswer;
}

const FORMAT = 1;
/** Reports kept (the least recently written go first). */
const MAX_REPORTS = 16;

/**
 * The facts a report rests on, gathered while it is made: each question asked through it is
 * answered and recorded (as the loader model's FileView records its own).
 */
export class ReportFacts {
  private readonly facts = new Map<string, Fact>();
  /** The newest mtime or ctime among the identities recorded here (ms). */
  private newest = 0;
  private readonly devices = new Map<number, string>();
  /** False once part of the report rests on something no fact records (a result the verdict cache did not keep). */
  complete = true;

  constructor(readonly sysroot: string) {}

  private add(kind: InputKind, path: string, value: string, st?: Stats | null): void {
    this.facts.set(inputKey(kind, path), [kind, path, value]);
    if (!st) return;
    this.newest = Math.max(this.newest, st.mtimeMs, st.ctimeMs);
    if (!this.devices.has(st.dev)) this.devices.set(st.dev, path);
  }

  /** The facts of a verdict the check kept (the verdict cache's, as stored or just computed). */
  addFacts(facts: Iterable<readonly [InputKind, string, string]>): void {
    for (const [kind, path, value] of facts) this.add(kind, path, value);
  }

  /** stat(2) following links, recorded. */
  stat(path: string): Stats | null {
    const st = statOrNull(path);
    this.add('s', path, st ? identity(st) : '-', st);
    return st;
  }

  /** A path of the image resolved in the image (sysroot.ts realpathIn), recorded. */
  realpathIn(path: string): string | undefined {
    const host = realpathIn(this.sysroot, path);
    this.add('h', path, host ?? '-');
    return host;
  }

  /** realpath(3) of a host path, recorded. */
  realpath(path: string): string | null {
    let real: string | null;
    try {
      real = realpathSync.native(path);
    } catch {
      real = null;
    }
    this.add('r', path, real ?? '-');
    return real;
  }

  /** The facts, when they may be kept: complete, none changed after `settled`, none on a network file system. */
  keepable(settled: number): Fact[] | undefined {
    if (!this.complete || this.newest >= settled) return undefined;
    const types = new Map<number, boolean>();
    for (const [dev, path] of this.devices) if (onNetworkFs(types, dev, path)) return undefined;
    return [...this.facts.values()];
  }
}

export interface ReportMemoOptions {
  /** $CUDAENV_DIR/cache/check */
  dir: string;
  /** What names the kept report: the request as given (a later answer to it replaces the earlier). */
  request: Record<string, unknown>;
  /**
   * Everything else the answer depends on besides the facts: the listing, the verdict cache's key.
   * Asked after the kept links are shown to hold (./link-proof.ts), whose answers the listing then reuses.
   */
  key: () => Record<string, unknown>;
  sysroot: string;
  cwd: string;
  /** The loader platform for 'class:machine', as the verdict cache computes it (kind 'p'). */
  platform: (key: string) => string;
}

export class ReportMemo {
  private readonly startedAt = Date.now();
  private readonly request: string;
  private key: string | undefined;
  private readonly file: string;

  constructor(private readonly options: ReportMemoOptions) {
    this.request = JSON.stringify(options.request);
    // Named by the request alone: the whole key (the listing of a large tree: 7 KB for PyTorch's)
    // took the hash, in the interpreter, 4 ms; it is compared whole when read.
    this.file = join(options.dir, 'reports', `${keyHash(this.request)}.json`);
  }

  private keyText(): string {
    this.key ??= JSON.stringify(this.options.key());
    return this.key;
  }

  /** The answer kept for this request, when every fact it rests on reads the same. */
  answer(): MemoAnswer | undefined {
    let data: MemoFile;
    try {
      data = JSON.parse(readFileSync(this.file, 'utf8')) as MemoFile;
    } catch {
      return undefined;
    }
    // Another request hashing alike, an older format, a damaged or hand-edited file: a miss, never a crash.
    if (data?.format !== FORMAT || data.request !== this.request || data.code !== codeStamp() || typeof data.key !== 'string' || !Array.isArray(data.facts) || !isAnswer(data.answer)) return undefined;
    const {sysroot, platform, cwd} = this.options;
    const links = data.links !== undefined && linksHold(data.links, sysroot, data.facts);
    if (data.key !== this.keyText()) return undefined;
    for (const fact of data.facts) {
      if (!Array.isArray(fact) || typeof fact[1] !== 'string') return undefined;
      const [kind, path, value] = fact;
      if (kind === 'h' && links) continue;
      if (currentValue(kind, path, sysroot, platform, cwd) !== value) return undefined;
    }
    return data.answer;
  }

  /** Keeps `answer` with the facts it rests on, when they may be kept. A read-only or full store is not an error. */
  keep(facts: ReportFacts, answer: MemoAnswer): void {
    const settled = this.startedAt - SETTLE_MS;
    const kept = facts.keepable(settled);
    if (!kept) return;
    const types = new Map<number, boolean>();
    const links = proveLinks(kept, this.options.sysroot, settled, (dev, path) => onNetworkFs(types, dev, path));
    const data: MemoFile = {format: FORMAT, request: this.request, code: codeStamp(), key: this.keyText(), facts: kept, ...(links ? {links} : {}), answer};
    try {
      writeFileSafely(this.file, JSON.stringify(data), {durable: false});
      prune(join(this.options.dir, 'reports'), this.file, MAX_REPORTS);
    } catch {
      // the next check is simply not faster
    }
  }
}

function isAnswer(a: unknown): a is MemoAnswer {
  const answer = a as MemoAnswer | null;
  return typeof answer?.text === 'string' && (answer.exitCode === 0 || answer.exitCode === 1) && Array.isArray(answer.warnings) && answer.warnings.every((w) => typeof w === 'string');
}
