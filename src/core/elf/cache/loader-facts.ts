import {readFileSync} from 'node:fs';
import {join} from 'node:path';
import type {HostLoaderFacts, LoaderFactsStore} from '../read/ldcache/host-loader.js';
import {auxv, AT_HWCAP, AT_HWCAP2} from '../read/machine/auxv.js';
import {identity, statOrNull} from './inputs.js';
import {SETTLE_MS} from './verdict-cache.js';
import {writeFileSafely} from '../../safe-fs/index.js';

/**
 * What the host's ld.so says it searches (read/ldcache/host-loader.ts), kept in
 * $CUDAENV_DIR/cache/check/loader/ under the loader's own identity: starting the loader twice
 * (`--list-diagnostics`, `--help`) cost a cached check of a whole library tree more than
 * everything else it does (issue 37). The answer depends on the loader file (a glibc upgrade
 * replaces it: another inode and ctime), the CPU the kernel describes (a reboot, perhaps onto
 * another machine: the boot id; the auxv hardware capabilities) and GLIBC_TUNABLES (the loader
 * is started with this process's environment); any change and the loader is asked again.
 */
interface Stored {
  interp: string;
  stamp: string;
  facts: HostLoaderFacts | null;
}

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '-';
  }
}

/** Facts as JSON (their hwcap masks are bigints). */
function encode(facts: HostLoaderFacts | null): unknown {
  return facts && {...facts, hwcapImportant: facts.hwcapImportant?.toString() ?? null, platformBit: facts.platformBit?.toString() ?? null};
}

function decode(value: unknown): HostLoaderFacts | null | undefined {
  if (value === null) return null;
  const v = value as Record<string, unknown>;
  if (typeof v !== 'object' || !Array.isArray(v.hwcaps) || !Array.isArray(v.hwcapsKnown) || !Array.isArray(v.legacy)) return undefined;
  const big = (x: unknown): bigint | null => (typeof x === 'string' && /^\d+$/.test(x) ? BigInt(x) : null);
  return {
    hwcaps: v.hwcaps as string[], hwcapsKnown: v.hwcapsKnown as string[], legacy: v.legacy as string[],
    platform: typeof v.platform === 'string' ? v.platform : null,
    hwcapImportant: big(v.hwcapImportant), platformBit: big(v.platformBit),
    isa1: typeof v.isa1 === 'number' ? v.isa1 : null,
  };
}

export class LoaderFactsFile implements LoaderFactsStore {
  private readonly startedAt = Date.now();

  /** @param dir $CUDAENV_DIR/cache/check (the facts go into its loader/ subdirectory). */
  constructor(private readonly dir: string) {}

  private fileFor(interp: string): string {
    return join(this.dir, 'loader', `${interp.replace(/^\/+/, '').replace(/[^\w.-]/g, '_')}.json`);
  }

  /** What the loader's answer rests on, now; null when the loader cannot be stat'ed or changed just now. */
  private stamp(interp: string): string | null {
    const st = statOrNull(interp);
    if (!st) return null;
    if (Math.max(st.mtimeMs, st.ctimeMs) >= this.startedAt - SETTLE_MS) return null;
    return [identity(st), bootId(), auxv(AT_HWCAP) ?? '-', auxv(AT_HWCAP2) ?? '-', process.env.GLIBC_TUNABLES ?? '\0unset'].join('|');
  }

  get(interp: string): HostLoaderFacts | null | undefined {
    const stamp = this.stamp(interp);
    if (stamp === null) return undefined;
    try {
      const data = JSON.parse(readFileSync(this.fileFor(interp), 'utf8')) as Stored;
      return data.interp === interp && data.stamp === stamp ? decode(data.facts) : undefined;
    } catch {
      return undefined; // none yet, or damaged: the loader is asked
    }
  }

  set(interp: string, facts: HostLoaderFacts | null): void {
    const stamp = this.stamp(interp);
    if (stamp === null) return;
    const file = this.fileFor(interp);
    try {
      writeFileSafely(file, JSON.stringify({interp, stamp, facts: encode(facts)}), {durable: false});
    } catch {
      // a read-only store: the loader is asked next time too
    }
  }
}
