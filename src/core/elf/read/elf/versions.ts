import type {ElfVersionDefinition, ElfVersionNeed} from './types.js';
import {ElfError} from './errors.js';
import {Fields} from './fields.js';
import type {ElfFile} from './file.js';
import type {ParsedHeader} from './header.js';
import type {StringTable} from './strings.js';

/** Version indexes are 15 bits; no chain can have more entries than that. */
const MAX_CHAIN = 0x8000;
export const VER_FLG_BASE = 0x1;
export const VER_FLG_WEAK = 0x2;

/**
 * Walk a `*_next` chain (glibc follows the links and ignores the counts, elf-loader-spec §3.1).
 * Offsets only move forward, so the end of the file bounds it; the cap stops absurd chains early.
 */
function* chain(file: ElfFile, start: number, size: number, nextAt: number, what: string, h: ParsedHeader): Generator<[number, Fields]> {
  let off = start;
  for (let n = 0; ; n++) {
    if (n >= MAX_CHAIN) throw new ElfError(file.path, 'malformed', `${what} chain has more than ${MAX_CHAIN} entries`);
    const f = new Fields(file.read(off, size, what), h.littleEndian, h.is64);
    yield [off, f];
    const next = f.u32(nextAt);
    if (next === 0) return;
    off += next;
  }
}

export function readVersionDefinitions(file: ElfFile, h: ParsedHeader, off: number, strings: StringTable): ElfVersionDefinition[] {
  const defs: ElfVersionDefinition[] = [];
  for (const [at, f] of chain(file, off, 20, 16, 'version definition (verdef)', h)) {
    const version = f.u16(0);
    if (version !== 1) throw new ElfError(file.path, 'unsupported', `unsupported version ${version} of a Verdef record`);
    const count = f.u16(6);
    const names: string[] = [];
    if (count > 0) {
      let n = 0;
      for (const [, aux] of chain(file, at + f.u32(12), 8, 4, 'version definition name (verdaux)', h)) {
        names.push(strings.get(aux.u32(0), 'verdaux name'));
        if (++n >= count) break;
      }
    }
    defs.push({index: f.u16(4), flags: f.u16(2), hash: f.u32(8), name: names[0] ?? '', parents: names.slice(1)});
  }
  return defs;
}

export function readVersionNeeds(file: ElfFile, h: ParsedHeader, off: number, strings: StringTable): ElfVersionNeed[] {
  const needs: ElfVersionNeed[] = [];
  for (const [at, f] of chain(file, off, 16, 12, 'version requirement (verneed)', h)) {
    const version = f.u16(0);
    if (version !== 1) throw new ElfError(file.path, 'unsupported', `unsupported version ${version} of a Verneed record`);
    const count = f.u16(2);
    const need: ElfVersionNeed = {file: strings.get(f.u32(4), 'verneed file name'), versions: []};
    if (count > 0) {
      for (const [, aux] of chain(file, at + f.u32(8), 16, 12, 'version requirement entry (vernaux)', h)) {
        const flags = aux.u16(4);
        need.versions.push({
          name: strings.get(aux.u32(8), 'vernaux name'),
          hash: aux.u32(0),
          flags,
          weak: (flags & VER_FLG_WEAK) !== 0,
          index: aux.u16(6),
        });
        if (need.versions.length >= count) break;
      }
    }
    needs.push(need);
  }
  return needs;
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
