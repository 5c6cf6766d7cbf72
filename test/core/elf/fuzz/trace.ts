import {realpathSync} from 'node:fs';
import {checkLibraries, type CheckOptions, type CheckReport} from '../../../../src/core/elf/index.js';
import {readElfSync} from '../../../../src/core/elf/read/elf/index.js';

/**
 * What the differential fuzzers compare: the real loader's answer in `ldd -r`'s trace mode (ld.so
 * with LD_TRACE_LOADED_OBJECTS, LD_WARN, LD_BIND_NOW) and the model's, as sets of resolved files.
 * Used by loader-fuzz (the host's glibc) and loader-glibc-releases (other glibc releases, chroot).
 */
export interface Real {
  libs: Set<string>;
  versions: Set<string>;
  symbols: Set<string>;
  /** The objects with undefined symbols, in the order they are reported: ld.so's relocation order. */
  symbolObjects: string[];
  abort: string | null;
  /**
   * The object whose mapping stops the loader (its name as ld.so prints it, last path component),
   * or null: in trace mode a missing library is listed and passed, while an executable stack the
   * loader may not make (glibc.rtld.execstack=0) or a file it cannot load (not ELF, empty) ends
   * the run before anything is listed.
   */
  fatal: string | null;
  /** The model's: the library the version of its first check_match abort names. */
  abortLibrary?: string | null;
  raw: string;
}

/** Names a path as one file: (case dir, path as printed) -> a canonical host path. */
export type Resolve = (dir: string, path: string) => string;

/** The name of a library neither side found, as the two sides compare it (by default as printed). */
export type MissingName = (name: string) => string;
const asPrinted: MissingName = (name) => name;

/** The host's resolution: `sl/..` resolved by the kernel (sl is a symlink), never as text. */
export const hostReal: Resolve = (dir, p) => {
  try {
    return realpathSync.native(p.startsWith('/') ? p : `${dir}/${p}`);
  } catch {
    return `?${p}`;
  }
};

export function parseTrace(dir: string, out: string, real: Resolve = hostReal, missing: MissingName = asPrinted): Real {
  // `@@TRC N`: the harness's record of ld.so's exit status; a signal (128+) is a crash even
  // where no shell said "Segmentation fault".
  const status = /^@@TRC (\d+)$/m.exec(out);
  out = out.replace(/^@@TRC \d+\n?/m, '');
  if (status && Number(status[1]) >= 128 && !/Segmentation fault|core dumped/.test(out)) out += `\n(ld.so was killed by signal ${Number(status[1]) - 128}: Segmentation fault)\n`;
  const v: Real = {libs: new Set(), versions: new Set(), symbols: new Set(), symbolObjects: [], abort: null, fatal: null, raw: out};
  for (const line of out.split('\n')) {
    let m = /^\t(\S+) => (.+?)(?: \(0x[0-9a-f]+\))?$/.exec(line);
    if (m) {
      if (!m[1].startsWith('ld-linux')) v.libs.add(m[2] === 'not found' ? `missing:${missing(m[1])}` : real(dir, m[2]));
      continue;
    }
    m = /^\t(\S+) \(0x[0-9a-f]+\)$/.exec(line);
    if (m) {
      if (m[1] !== 'linux-vdso.so.1' && !m[1].includes('ld-linux')) v.libs.add(real(dir, m[1]));
      continue;
    }
    m = /Inconsistency detected by ld\.so: [^:]+: \d+: (\w+): Assertion/.exec(line);
    if (m) v.abort = m[1];
    m = /error while loading shared libraries: ([^:]+): (?:cannot enable executable stack as shared object requires|invalid ELF header|file too short)/.exec(line);
    if (m) v.fatal = m[1].split('/').pop()!;
    m = /version `([^']+)' not found \(required by (.+)\)$/.exec(line);
    if (m) v.versions.add(`${m[1]} ${real(dir, m[2])}`);
    // glibc before 2.30 words a versioned reference its version's library does not satisfy this
    // way (elf-loader-spec.md, the 2.30 row): in the cases met, the same failure.
    m = /^undefined symbol: ([^,\t]+)(?:, version \S*)?\t\((.+)\)$/.exec(line)
      ?? /^symbol (\S+) version \S+ not defined in file \S+ with link time reference\t\((.+)\)$/.exec(line);
    if (m) {
      v.symbols.add(`${m[1]} ${real(dir, m[2])}`);
      if (!v.symbolObjects.includes(real(dir, m[2]))) v.symbolObjects.push(real(dir, m[2]));
    }
  }
  return v;
}

export function modelTrace(report: CheckReport, dir: string, real: Resolve = hostReal, missing: MissingName = asPrinted): Real {
  const v: Real = {libs: new Set(), versions: new Set(), symbols: new Set(), symbolObjects: [], abort: null, fatal: null, raw: ''};
  // What ends a load in trace mode: an executable stack refused, or a file the loader stops at (a
  // `not-found` whose `chosen` is that file; one found nowhere gets a stand-in instead).
  const stop = report.problems.find((p) => p.kind === 'executable-stack' || (p.kind === 'not-found' && p.chosen !== null));
  if (stop) v.fatal = (stop.kind === 'executable-stack' ? stop.library! : stop.chosen!.replace(/ \(.*$/, '')).split('/').pop()!;
  for (const o of report.objects) {
    // Every loaded object is listed, a preload nothing needs too (the checked one is the main object).
    if (!/\/ld-linux[^/]*$/.test(o.path) && real(dir, o.path) !== real(dir, report.checked[0])) v.libs.add(real(dir, o.path));
    for (const e of o.needed) {
      if (e.path && /\/ld-linux[^/]*$/.test(e.path)) continue;
      if (e.path === null) v.libs.add(`missing:${missing(e.name)}`);
      else if (real(dir, e.path) !== real(dir, report.checked[0])) v.libs.add(real(dir, e.path));
    }
  }
  for (const p of report.problems) {
    if (p.kind === 'version-not-found') v.versions.add(`${p.version} ${real(dir, p.object)}`);
    if (p.kind === 'undefined-symbol' || p.kind === 'unversioned-undefined-symbol') {
      v.symbols.add(`${p.symbol} ${real(dir, p.object)}`);
      if (!v.symbolObjects.includes(real(dir, p.object))) v.symbolObjects.push(real(dir, p.object));
    }
  }
  const aborts = report.problems.filter((p) => p.kind === 'loader-abort');
  const first = aborts.find((p) => p.symbol === null) ?? aborts[0];
  if (first) {
    v.abort = first.symbol === null ? '_dl_check_map_versions' : 'check_match';
    v.abortLibrary = first.library;
  }
  return v;
}

const sorted = (s: Set<string>) => [...s].sort();

/**
 * References versioned into a library `ldd` did not find under that name: what it says of them
 * depends on the release, not on the libraries. ld.so keeps a stand-in under the missing name
 * (l_faked), leaves the version entries of that requirement unset, and then, past the missing
 * library a real run stops at: 2.36 sometimes crashes, 2.41 reports the symbol unbound with an
 * empty version even where a copy loaded later under another path defines it, 2.31 says nothing.
 * The returned filter leaves these `symbol object` entries out, on both sides; the missing library
 * itself is compared (`libs`), and so is every other reference.
 */
function notPastMissing(r: Real): (entry: string) => boolean {
  const missing = new Set([...r.libs].filter((l) => l.startsWith('missing:')).map((l) => l.slice('missing:'.length)));
  const versionFiles = new Map<string, Map<string, string | null>>();
  const versionFileOf = (object: string, symbol: string): string | null => {
    let refs = versionFiles.get(object);
    if (!refs) {
      refs = new Map();
      try {
        for (const s of readElfSync(object, {symbols: true}).symbols) if (!s.defined) refs.set(s.name, s.versionFile);
      } catch {
        // unreadable: nothing to leave out
      }
      versionFiles.set(object, refs);
    }
    return refs.get(symbol) ?? null;
  };
  return (entry) => {
    if (missing.size === 0) return true;
    const at = entry.indexOf(' ');
    const file = versionFileOf(entry.slice(at + 1), entry.slice(0, at));
    return file === null || !missing.has(file);
  };
}

/** Differences between the real loader in trace mode and the model, as lines (empty: agree). */
export function compareTrace(r: Real, m: Real): string[] {
  const kept = notPastMissing(r);
  r = {...r, symbols: new Set([...r.symbols].filter(kept))};
  m = {...m, symbols: new Set([...m.symbols].filter(kept))};
  r.symbolObjects = r.symbolObjects.filter((o) => [...r.symbols].some((e) => e.endsWith(` ${o}`)));
  m.symbolObjects = m.symbolObjects.filter((o) => [...m.symbols].some((e) => e.endsWith(` ${o}`)));
  const out: string[] = [];
  // Mapping stopped: nothing is listed, and only the object it stopped at can be compared.
  if (r.fatal !== null || m.fatal !== null) return r.fatal === m.fatal ? [] : [`mapping stopped at: loader ${r.fatal ?? 'none'}, model ${m.fatal ?? 'none'}`];
  // ld.so in trace mode crashes relocating a versioned reference into a library it did not find
  // (see below): an assertion the relocations would hit later is never printed then.
  const crashed = /Segmentation fault|core dumped/.test(r.raw);
  // check_match's assertion on a reference versioned into a library ldd did not find for another
  // object (its stand-in comes first): past a missing library too, where a real run never gets.
  const missingNames = new Set([...r.libs].filter((l) => l.startsWith('missing:')).map((l) => l.slice('missing:'.length)));
  const abortPastMissing = r.abort === null && m.abort === 'check_match' && missingNames.has(m.abortLibrary ?? '');
  if (r.abort !== m.abort && !(crashed && r.abort === null && m.abort === 'check_match') && !abortPastMissing) out.push(`abort: loader ${r.abort ?? 'none'}, model ${m.abort ?? 'none'}`);
  // An abort in _dl_check_map_versions comes before the listing; check_match after it.
  if (r.abort === '_dl_check_map_versions') return out;
  if (JSON.stringify(sorted(r.libs)) !== JSON.stringify(sorted(m.libs))) out.push(`libs: loader ${JSON.stringify(sorted(r.libs))}\n       model  ${JSON.stringify(sorted(m.libs))}`);
  if (JSON.stringify(sorted(r.versions)) !== JSON.stringify(sorted(m.versions))) out.push(`versions: loader ${JSON.stringify(sorted(r.versions))}, model ${JSON.stringify(sorted(m.versions))}`);
  // ld.so 2.36 in trace mode crashes relocating a versioned reference into a library it did not
  // find (l_versions is sized from the found providers): no symbol verdict to compare then (the
  // dlopen run of the same case still checks the model, which stops at the missing library).
  if (r.abort === null && !crashed && JSON.stringify(sorted(r.symbols)) !== JSON.stringify(sorted(m.symbols))) {
    out.push(`symbols: loader ${JSON.stringify(sorted(r.symbols))}, model ${JSON.stringify(sorted(m.symbols))}`);
  } else if (r.abort === null && !crashed && JSON.stringify(r.symbolObjects) !== JSON.stringify(m.symbolObjects)) {
    // The same symbols: then in the same order of objects (ld.so relocates l_initfini backwards).
    out.push(`relocation order: loader ${JSON.stringify(r.symbolObjects)}, model ${JSON.stringify(m.symbolObjects)}`);
  }
  return out;
}

/**
 * Where the loader stops while mapping (a file it cannot load, an object asking for an executable
 * stack it may not make: `r.fatal`, the name it printed), `ldd` lists nothing: what it mapped before
 * is what LD_DEBUG=files says ("file=NAME [0];  generating link map", NAME as searched for), which
 * must be the report's objects (a preload, each dependency mapped before the stop), compared by
 * file name. Empty when they agree.
 */
export function compareMappedAtStop(debug: string, report: CheckReport, r: Real): string[] {
  // An object refused for its executable stack is mapped first ("generating link map"), then
  // dropped: not one the process has (a file the loader cannot load never gets that far). The
  // main object is on both sides whatever stops.
  const main = report.checked[0]?.split('/').pop();
  const real = [...debug.matchAll(/file=(\S+) \[0\];\s+generating link map/g)].map((m) => m[1].split('/').pop()!);
  const dropped = /cannot enable executable stack/.test(r.raw) ? r.fatal : null;
  const at = dropped === null ? -1 : real.lastIndexOf(dropped);
  if (at >= 0) real.splice(at, 1);
  // A preload refused for the same reason was mapped and dropped too ("cannot be preloaded
  // (cannot enable executable stack ...): ignored"), before the objects the program needs.
  for (const m of r.raw.matchAll(/object '([^']+)' from \S+ cannot be preloaded \(cannot enable executable stack/g)) {
    const i = real.indexOf(m[1].split('/').pop()!);
    if (i >= 0) real.splice(i, 1);
  }
  const others = (names: string[]) => names.filter((n) => n !== main).sort();
  const model = others(report.objects.map((o) => o.path.split('/').pop()!));
  if (JSON.stringify(others(real)) === JSON.stringify(model)) return [];
  return [`mapped before the stop: loader ${JSON.stringify(others(real))}, model ${JSON.stringify(model)}`];
}

/** ld.so's warning for an LD_PRELOAD entry it could not load (the run goes on): not the driver's answer. */
export const withoutPreloadWarnings = (out: string): string => out.replace(/^ERROR: ld\.so: object .* from LD_PRELOAD cannot be preloaded .*: ignored\.\n?/gm, '');

/** What a dlopen(RTLD_NOW|RTLD_GLOBAL) driver printed: OK, or ERR and dlerror's message (or an abort). */
export interface RealDlopen {
  ok: boolean;
  abort: string | null;
  message: string;
}

/**
 * dlopen stops at the first failure of a stage: missing object, then versions, then relocation.
 * The model's first problem of that stage must be the one the loader reports.
 */
export function compareDlopen(r: RealDlopen, report: CheckReport, dir: string, real: Resolve = hostReal): string[] {
  // --exe with --strict: every problem fails a dlopen (RTLD_NOW binds unversioned references too).
  // A PLT slot of an object the program starts with (an LD_PRELOAD object and what it needs) is
  // bound at its first call, and the driver calls nothing of the case: those problems
  // ('first-call') never stop its run. What the program binds while it starts stops it there,
  // before the dlopen: the model ranks those first.
  const failing = report.problems.filter((p) => p.when !== 'first-call');
  const has = (pred: (p: CheckReport['problems'][number]) => boolean) => failing.some(pred);
  const stage = (p: CheckReport['problems'][number]) =>
    p.kind === 'not-found' || p.kind === 'executable-stack' ? 0 : p.kind === 'version-not-found' || (p.kind === 'loader-abort' && p.symbol === null) ? 1 : 2;
  // The report's own order: by stage, and with --exe what fails at the program's start first.
  const first = failing.length > 0 ? stage(failing[0]) : 3;
  const base = `loader said ${JSON.stringify(r.message.trim())}; model: ${JSON.stringify(failing.map((p) => `${p.kind} ${p.library ?? ''} ${p.version ?? ''} ${p.symbol ?? ''}${p.when ? ` (${p.when})` : ''}`))}`;
  if (r.ok) return failing.length === 0 ? [] : [`dlopen: ${base}`];
  if (r.abort) {
    const want = r.abort === 'check_match' ? (p: CheckReport['problems'][number]) => p.kind === 'loader-abort' && p.symbol !== null
      : (p: CheckReport['problems'][number]) => p.kind === 'loader-abort' && p.symbol === null;
    return has(want) && first >= (r.abort === 'check_match' ? 2 : 1) ? [] : [`dlopen abort ${r.abort}: ${base}`];
  }
  // Mapping stops at the first object it cannot open or may not map: the model's first mapping problem.
  const firstMapping = first === 0 ? failing[0] : undefined;
  let m = /([^\s:]+): cannot open shared object file/.exec(r.message);
  if (m) {
    const name = m[1].split('/').pop();
    return firstMapping?.kind === 'not-found' && firstMapping.library?.split('/').pop() === name ? [] : [`dlopen (first mapping problem): ${base}`];
  }
  m = /([^\s:]+): (?:invalid ELF header|file too short)/.exec(r.message);
  if (m) {
    const name = m[1].split('/').pop();
    return firstMapping?.kind === 'not-found' && firstMapping.chosen?.replace(/ \(.*$/, '').split('/').pop() === name ? [] : [`dlopen (first mapping problem): ${base}`];
  }
  m = /([^\s:]+): cannot enable executable stack as shared object requires/.exec(r.message);
  if (m) {
    const name = m[1].split('/').pop();
    return firstMapping?.kind === 'executable-stack' && firstMapping.library?.split('/').pop() === name ? [] : [`dlopen (first mapping problem): ${base}`];
  }
  m = /version `([^']+)' not found \(required by (.+)\)/.exec(r.message);
  if (m) {
    const firstVersion = failing.find((p) => stage(p) === 1);
    return firstVersion?.kind === 'version-not-found' && firstVersion.version === m[1] && real(dir, firstVersion.object) === real(dir, m[2]) && first === 1
      ? [] : [`dlopen (first version problem): ${base}`];
  }
  // A dlopened object's initial-exec TLS that the static TLS block has no room for (met while relocating).
  m = /([^\s:]+): cannot allocate memory in static TLS block/.exec(r.message);
  if (m) {
    const firstSymbol = failing.find((p) => stage(p) === 2);
    return firstSymbol?.kind === 'static-tls' && real(dir, firstSymbol.object) === real(dir, m[1]) && first === 2 ? [] : [`dlopen (first static TLS problem): ${base}`];
  }
  // The dlopen's relocation (dlerror), or, with an LD_PRELOAD, a reference the program binds while
  // it starts ("symbol lookup error", before any dlopen).
  m = /^ERR (.+): undefined symbol: ([^,\s]+)/m.exec(r.message) ?? /symbol lookup error: (.+): undefined symbol: ([^,\s]+)/.exec(r.message)
    ?? /^ERR (.+): symbol (\S+) version \S+ not defined in file \S+ with link time reference/m.exec(r.message)
    ?? /symbol lookup error: (.+): symbol (\S+) version \S+ not defined in file \S+ with link time reference/.exec(r.message);
  if (m) {
    const firstSymbol = failing.find((p) => stage(p) === 2);
    return firstSymbol !== undefined && (firstSymbol.kind === 'undefined-symbol' || firstSymbol.kind === 'unversioned-undefined-symbol') &&
      firstSymbol.symbol === m[2] && real(dir, firstSymbol.object) === real(dir, m[1]) && first === 2 ? [] : [`dlopen (first symbol problem): ${base}`];
  }
  return [`dlopen: unclassified loader message; ${base}`];
}

/**
 * Everything the fuzzers compare for one case: the model as `ldd` runs it against the trace (and,
 * where the load stops, against LD_DEBUG=files of it), and the model with `exe` against the dlopen.
 */
export async function caseDisagreements(
  opts: CheckOptions, r: Real, d: RealDlopen, debug: string | undefined, exe: string, dir: string,
  real: Resolve = hostReal, missing: MissingName = asPrinted,
): Promise<string[]> {
  const report = await checkLibraries(opts);
  const diffs = compareTrace(r, modelTrace(report, dir, real, missing));
  // Stopped while mapping: nothing is listed, and what was mapped before the stop is compared instead.
  if (r.fatal !== null && debug !== undefined) diffs.push(...compareMappedAtStop(debug, report, r));
  diffs.push(...compareDlopen(d, await checkLibraries({...opts, exe, strict: true}), dir, real));
  return diffs;
}
