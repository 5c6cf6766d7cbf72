import type {Finding} from './finding.js';
import type {SymbolMemo} from './symbol-memo.js';
import {copyReferences, staticTlsOf} from '../cache/file-cache.js';
import type {LoadedObject, LoaderProcess} from '../search/loader-process.js';
import {rseqArea, StaticTlsBlock, staticTlsSurplus} from './static-tls.js';
import {versionFileStop} from './version-file-stop.js';
import {checkMatchAbort} from './check-match.js';
import type {SymbolRef} from './symbols.js';

/**
 * Relocations that fail without an undefined symbol behind them, which the checker's symbol pass
 * does not see: a program's copy relocations (the symbol is defined in the program), and a
 * dlopened object's initial-exec TLS relocations (./static-tls.ts).
 */

const ET_EXEC = 2;
const DF_STATIC_TLS = 0x10;
const STT_TLS = 6;

/** The static TLS block of the program's start: its objects' TLS in load order (the modules ld.so numbers first). */
export function staticTlsBlockOf(p: LoaderProcess, startup: Set<LoadedObject>): StaticTlsBlock {
  return new StaticTlsBlock(p.main.info.machine, p.platform.glibc, p.objects.filter((o) => startup.has(o) && o.role !== 'interp').map((o) => o.info),
    staticTlsSurplus(p.ctx.tunables, p.platform.glibc), rseqArea(p.platform.glibc, p.platform.rseq));
}

/**
 * A dlopened object's initial-exec TLS relocations and TLS descriptors, in the order its relocation
 * meets them: each initial-exec one needs a static offset for the block of the object its symbol
 * binds to (itself for its own variables); one not placed yet is carved from the surplus, or the
 * dlopen fails (elf/dl-reloc.c CHECK_STATIC_TLS, "cannot allocate memory in static TLS block"). A
 * descriptor places the block only where the optional surplus has room (TRY_STATIC_TLS). `block`
 * is asked for only when the object can have such relocations: nearly every process has none.
 */
export function staticTlsProblems(p: LoaderProcess, obj: LoadedObject, memo: SymbolMemo, block: () => StaticTlsBlock): Finding[] {
  const out: Finding[] = [];
  // Only an object marked DF_STATIC_TLS (x86; aarch64's binutils never marks one), with a TLS block
  // of its own, or referencing a thread-local symbol, has such relocations.
  if ((obj.info.dtFlags & DF_STATIC_TLS) === 0 && obj.info.tls === null && !obj.info.symbols.some((s) => !s.defined && s.type === STT_TLS)) return out;
  const tls = block();
  for (const ref of staticTlsOf(obj.info)) {
    // A symbol binds where a lookup finds it first (another object's variable of that name may interpose).
    const owner = ref.symbol === null ? obj : p.scope.find((o) => memo.defines(o.info, ref.symbol!));
    if (!owner?.info.tls || tls.has(owner.info)) continue;
    const free = tls.free;
    const shortfall = tls.shortfall(owner.info);
    // A descriptor that finds no room is resolved dynamically: nothing fails.
    if (tls.place(owner.info, ref.optional) || ref.optional) continue;
    const {surplus, optional, tunable} = tls.settings;
    out.push({
      kind: 'static-tls', object: owner, library: null, version: null, symbol: ref.symbol?.name ?? null, provider: null, edge: p.edgeTo(owner) ?? null, rank: ref.at,
      staticTls: {referrer: obj, free, shortfall, surplus, optional, tunable, blockAlign: tls.align},
    });
  }
  return out;
}

/**
 * A program's copy relocations whose definition nothing finds (elf/dl-lookup.c with
 * ELF_RTYPE_CLASS_COPY: the lookup skips the program, which holds the copy itself). ld.so makes
 * them while the program starts, whatever the binding mode, so with --exe only what it starts with counts.
 */
export function copyProblems(
  p: LoaderProcess, obj: LoadedObject, memo: SymbolMemo, startup: Set<LoadedObject> | null,
  rules: {stopAtVersionFile?: boolean; checkMatch?: [number, number] | null} = {},
): Finding[] {
  const out: Finding[] = [];
  // Only programs have copy relocations: a library's relocations are not read again for them.
  if (obj.info.type !== ET_EXEC && obj.info.interp === null) return out;
  const scope = startup === null ? p.scope : p.scope.filter((o) => startup.has(o));
  const when = startup ? {when: 'start' as const} : {};
  for (const c of copyReferences(obj.info)) {
    const ref: SymbolRef = {name: c.name, version: c.version, versionFile: c.versionFile, hidden: c.hidden};
    // Before glibc 2.41, check_match's assertion (./check-match.ts), met as for any other lookup.
    const abort = rules.checkMatch ? checkMatchAbort(p, obj, ref, memo, rules.checkMatch, scope) : null;
    if (abort) {
      out.push({...abort, copy: true, rank: c.rank, ...when});
      continue;
    }
    // Before glibc 2.30 the lookup stops at the library the version names (./version-file-stop.ts), weak or not.
    const stop = rules.stopAtVersionFile ? versionFileStop(scope, ref, memo, obj) : null;
    if (stop) {
      out.push({
        kind: 'undefined-symbol', object: obj, library: ref.versionFile, version: ref.version, symbol: ref.name, provider: stop.named,
        edge: p.edgeTo(stop.named) ?? null, ref, copy: true, rank: c.rank, versionFileStop: {later: stop.later, weak: c.weak}, ...when,
      });
      continue;
    }
    // A weak one that finds nothing is left as the program's own (dl-machine.h: sym == NULL).
    if (c.weak) continue;
    if (scope.some((o) => o !== obj && memo.defines(o.info, ref))) continue;
    const provider = ref.versionFile ? p.objectNamed(ref.versionFile) ?? null : null;
    out.push({
      kind: ref.version ? 'undefined-symbol' : 'unversioned-undefined-symbol', object: obj, library: ref.versionFile, version: ref.version,
      symbol: ref.name, provider, edge: provider ? p.edgeTo(provider) ?? null : null, ref, copy: true, rank: c.rank, ...when,
    });
  }
  return out;
}

