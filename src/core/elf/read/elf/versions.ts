import type {ElfVersionDefinition, ElfVersionNeed} from './types.js';
import {ElfError} from './errors.js';
import type {ElfFile} from './file.js';
import type {ParsedHeader} from './header.js';
import type {StringTable} from './strings.js';

/** Version indexes are 15 bits; no chain can have more entries than that. */
const MAX_CHAIN = 0x8000;
export const VER_FLG_BASE = 0x1;
export const VER_FLG_WEAK = 0x2;

// Every chain is walked as glibc walks it: following the `*_next` links and ignoring the counts
// (elf-loader-spec §3.1). Offsets only move forward, so the end of the file bounds a walk; the cap
// stops absurd chains early. Plain loops over file.fields: a generator and a Fields per record
// cost more than the records (they are parsed for every object a check reads).

function tooLong(file: ElfFile, what: string): ElfError {
  return new ElfError(file.path, 'malformed', `${what} chain has more than ${MAX_CHAIN} entries`);
}

const VERDEF = 'version definition (verdef)';
const VERDAUX = 'version definition name (verdaux)';
const VERNEED = 'version requirement (verneed)';
const VERNAUX = 'version requirement entry (vernaux)';

export function readVersionDefinitions(file: ElfFile, h: ParsedHeader, off: number, strings: StringTable): ElfVersionDefinition[] {
  const defs: ElfVersionDefinition[] = [];
  for (let at = off, n = 0; ; n++) {
    if (n >= MAX_CHAIN) throw tooLong(file, VERDEF);
    const f = file.fields(at, 20, VERDEF);
    const version = f.u16(at);
    if (version !== 1) throw new ElfError(file.path, 'unsupported', `unsupported version ${version} of a Verdef record`);
    const count = f.u16(at + 6);
    const index = f.u16(at + 4);
    const flags = f.u16(at + 2);
    const hash = f.u32(at + 8);
    const aux = f.u32(at + 12);
    const next = f.u32(at + 16);
    let name = '';
    const parents: string[] = [];
    for (let a = at + aux, k = 0; k < count; k++) {
      if (k >= MAX_CHAIN) throw tooLong(file, VERDAUX);
      const g = file.fields(a, 8, VERDAUX);
      const s = strings.get(g.u32(a), 'verdaux name');
      if (k === 0) name = s;
      else parents.push(s);
      const step = g.u32(a + 4);
      if (step === 0) break;
      a += step;
    }
    defs.push({index, flags, hash, name, parents});
    if (next === 0) return defs;
    at += next;
  }
}

export function readVersionNeeds(file: ElfFile, h: ParsedHeader, off: number, strings: StringTable): ElfVersionNeed[] {
  const needs: ElfVersionNeed[] = [];
  for (let at = off, n = 0; ; n++) {
    if (n >= MAX_CHAIN) throw tooLong(file, VERNEED);
    const f = file.fields(at, 16, VERNEED);
    const version = f.u16(at);
    if (version !== 1) throw new ElfError(file.path, 'unsupported', `unsupported version ${version} of a Verneed record`);
    const count = f.u16(at + 2);
    const need: ElfVersionNeed = {file: strings.get(f.u32(at + 4), 'verneed file name'), versions: []};
    const aux = f.u32(at + 8);
    const next = f.u32(at + 12);
    for (let a = at + aux, k = 0; k < count; k++) {
      if (k >= MAX_CHAIN) throw tooLong(file, VERNAUX);
      const g = file.fields(a, 16, VERNAUX);
      const flags = g.u16(a + 4);
      need.versions.push({
        name: strings.get(g.u32(a + 8), 'vernaux name'),
        hash: g.u32(a),
        flags,
        weak: (flags & VER_FLG_WEAK) !== 0,
        index: g.u16(a + 6),
      });
      const step = g.u32(a + 12);
      if (step === 0) break;
      a += step;
    }
    needs.push(need);
    if (next === 0) return needs;
    at += next;
  }
}

/** versions[ndx] as `_dl_check_map_versions` builds it (§3.2): vernaux entries carry their file. */
export function versionTable(defs: ElfVersionDefinition[], needs: ElfVersionNeed[]): Map<number, {name: string; file: string | null}> {
  const table = new Map<number, {name: string; file: string | null}>();
  for (const need of needs) {
    for (const v of need.versions) table.set(v.index & 0x7fff, {name: v.name, file: need.file});
  }
  for (const def of defs) {
    if (def.flags & VER_FLG_BASE) continue;
    table.set(def.index & 0x7fff, {name: def.name, file: null});
  }
  return table;
}
