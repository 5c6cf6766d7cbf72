/**
 * Test helpers: build real shared objects with gcc, and parse binutils' readelf output as the oracle
 * the ELF reader is compared with.
 */
import {execFileSync} from 'node:child_process';
import {writeFileSync} from 'node:fs';
import {join} from 'node:path';

export function have(tool: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], {stdio: 'ignore'});
    return true;
  } catch {
    return false;
  }
}

/** Compile C source into `dir/out` with gcc and the given extra flags. */
export function gcc(dir: string, out: string, source: string, flags: string[]): string {
  const src = join(dir, `${out}.c`);
  writeFileSync(src, source);
  execFileSync('gcc', ['-o', join(dir, out), src, ...flags], {cwd: dir, stdio: ['ignore', 'ignore', 'pipe']});
  return join(dir, out);
}

const readelf = (tool: string, args: string[], file: string): string =>
  execFileSync(tool, [...args, file], {encoding: 'utf8', env: {...process.env, LC_ALL: 'C'}, maxBuffer: 256 * 1024 * 1024});

export interface OracleDynamic {
  needed: string[];
  soname: string | null;
  rpath: string | null;
  runpath: string | null;
  flags1Names: string[];
}

export function oracleDynamic(file: string, tool = 'readelf'): OracleDynamic {
  const out: OracleDynamic = {needed: [], soname: null, rpath: null, runpath: null, flags1Names: []};
  for (const line of readelf(tool, ['-dW'], file).split('\n')) {
    const m = /^\s*0x[0-9a-f]+ \((\w+)\)\s+(.*)$/.exec(line);
    if (!m) continue;
    const [, tag, rest] = m;
    const bracket = /\[(.*)\]/.exec(rest)?.[1] ?? null;
    if (tag === 'NEEDED') out.needed.push(bracket!);
    else if (tag === 'SONAME') out.soname = bracket;
    else if (tag === 'RPATH') out.rpath = bracket;
    else if (tag === 'RUNPATH') out.runpath = bracket;
    else if (tag === 'FLAGS_1') out.flags1Names = rest.replace(/^Flags:\s*/, '').trim().split(/\s+/);
  }
  return out;
}

export interface OracleVersions {
  defs: Array<{index: number; flags: string; name: string; parents: string[]}>;
  needs: Array<{file: string; versions: Array<{name: string; flags: string; index: number}>}>;
}

export function oracleVersions(file: string, tool = 'readelf'): OracleVersions {
  const out: OracleVersions = {defs: [], needs: []};
  let section: 'd' | 'r' | null = null;
  for (const line of readelf(tool, ['-VW'], file).split('\n')) {
    if (line.startsWith("Version definition section")) section = 'd';
    else if (line.startsWith("Version needs section")) section = 'r';
    else if (line.startsWith("Version symbols section")) section = null;
    let m;
    if (section === 'd' && (m = /Rev: \d+\s+Flags: (.*?)\s+Index: (\d+)\s+Cnt: \d+\s+Name: (\S+)/.exec(line))) {
      out.defs.push({flags: m[1], index: Number(m[2]), name: m[3], parents: []});
    } else if (section === 'd' && (m = /Parent \d+: (\S+)/.exec(line))) {
      out.defs.at(-1)!.parents.push(m[1]);
    } else if (section === 'r' && (m = /Version: \d+\s+File: (\S+)\s+Cnt: \d+/.exec(line))) {
      out.needs.push({file: m[1], versions: []});
    } else if (section === 'r' && (m = /Name: (\S+)\s+Flags: (.*?)\s+Version: (\d+)/.exec(line))) {
      out.needs.at(-1)!.versions.push({name: m[1], flags: m[2], index: Number(m[3])});
    }
  }
  return out;
}

export interface OracleSymbol {
  name: string;
  version: string | null;
  /** '@@' default, '@' non-default or reference, '' unversioned */
  sep: string;
  defined: boolean;
  type: string;
  bind: string;
  vis: string;
}

export const TYPE_NAMES: Record<number, string> = {0: 'NOTYPE', 1: 'OBJECT', 2: 'FUNC', 3: 'SECTION', 4: 'FILE', 5: 'COMMON', 6: 'TLS', 10: 'IFUNC'};
export const BIND_NAMES: Record<number, string> = {0: 'LOCAL', 1: 'GLOBAL', 2: 'WEAK', 10: 'UNIQUE'};
export const VIS_NAMES: Record<number, string> = {0: 'DEFAULT', 1: 'INTERNAL', 2: 'HIDDEN', 3: 'PROTECTED'};

/** `readelf --dyn-syms -W`: symbols 1..n-1 (the null symbol dropped) and the table's entry count. */
export function oracleSymbols(file: string, tool = 'readelf'): {count: number; symbols: OracleSymbol[]} {
  const text = readelf(tool, ['--dyn-syms', '-W'], file);
  const count = Number(/Symbol table '\.dynsym' contains (\d+) entr/.exec(text)?.[1] ?? 0);
  const symbols: OracleSymbol[] = [];
  for (const line of text.split('\n')) {
    // Binding/type values without a name for this OS ABI print as `<OS specific>: 10` (UNIQUE, IFUNC under ELFOSABI_NONE).
    const m = /^\s*(\d+): [0-9a-f]+\s+\S+\s+(\w+|<[^>]+>: \d+)\s+(\w+|<[^>]+>: \d+)\s+(\w+)\s+(?:\[[^\]]*\]\s+)?(\w+)\s+(\S+)(?:\s+\(\d+\))?\s*$/.exec(line);
    if (!m || m[1] === '0') continue;
    const [, , rawType, rawBind, vis, ndx, full] = m;
    const type = rawType === '<OS specific>: 10' ? 'IFUNC' : rawType;
    const bind = rawBind === '<OS specific>: 10' ? 'UNIQUE' : rawBind;
    const at = /^(.*?)(@@?)([^@]+)$/.exec(full);
    symbols.push({
      name: at ? at[1] : full,
      sep: at ? at[2] : '',
      version: at ? at[3] : null,
      defined: ndx !== 'UND',
      type, bind, vis,
    });
  }
  return {count, symbols};
}

/** Bits of DT_FLAGS_1 by readelf's names. */
export const FLAGS1_BITS: Record<string, number> = {
  NOW: 0x1, GLOBAL: 0x2, GROUP: 0x4, NODELETE: 0x8, LOADFLTR: 0x10, INITFIRST: 0x20, NOOPEN: 0x40, ORIGIN: 0x80,
  DIRECT: 0x100, TRANS: 0x200, INTERPOSE: 0x400, NODEFLIB: 0x800, NODUMP: 0x1000, CONFALT: 0x2000, ENDFILTEE: 0x4000,
  DISPRELDNE: 0x8000, DISPRELPND: 0x10000, NODIRECT: 0x20000, IGNMULDEF: 0x40000, NOKSYMS: 0x80000, NOHDR: 0x100000,
  EDITED: 0x200000, NORELOC: 0x400000, SYMINTPOSE: 0x800000, GLOBAUDIT: 0x1000000, SINGLETON: 0x2000000, STUB: 0x4000000, PIE: 0x8000000,
};
