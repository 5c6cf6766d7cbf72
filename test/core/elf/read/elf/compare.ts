import {expect} from '@jest/globals';
import {readElf} from '../../../../../src/core/elf/read/elf/index.js';
import type {ElfInfo} from '../../../../../src/core/elf/read/elf/types.js';
import {BIND_NAMES, FLAGS1_BITS, oracleDynamic, oracleSymbols, oracleVersions, TYPE_NAMES, VIS_NAMES} from './oracle.js';

/** Read `file` and assert that everything readelf reports about its dynamic linking agrees. */
export async function expectMatchesReadelf(file: string, tool = 'readelf'): Promise<ElfInfo> {
  const info = await readElf(file, {symbols: true});
  const dyn = oracleDynamic(file, tool);
  expect({needed: info.needed, soname: info.soname, rpath: info.rpath, runpath: info.runpath})
    .toEqual({needed: dyn.needed, soname: dyn.soname, rpath: dyn.rpath, runpath: dyn.runpath});
  const flags1 = dyn.flags1Names.reduce((acc, n) => acc | (FLAGS1_BITS[n] ?? 0), 0);
  expect(info.flags1).toBe(flags1);

  const ver = oracleVersions(file, tool);
  expect(info.versionDefinitions.map((d) => ({index: d.index, name: d.name, parents: d.parents, base: (d.flags & 1) === 1})))
    .toEqual(ver.defs.map((d) => ({index: d.index, name: d.name, parents: d.parents, base: d.flags.includes('BASE')})));
  expect(info.versionNeeds.map((n) => ({file: n.file, versions: n.versions.map((v) => ({name: v.name, index: v.index, weak: v.weak}))})))
    .toEqual(ver.needs.map((n) => ({file: n.file, versions: n.versions.map((v) => ({name: v.name, index: v.index, weak: v.flags.includes('WEAK')}))})));

  const syms = oracleSymbols(file, tool);
  expect(info.symbolCount).toBe(syms.count);
  // readelf prints `@@` for a default definition, `@` for a hidden one and for every reference,
  // and nothing for the absolute symbols that name the version nodes themselves.
  const shown = (s: ElfInfo['symbols'][number]): string | null =>
    s.version === null || (s.shndx === 0xfff1 && s.name === s.version) ? null : s.version;
  // readelf names STT_SECTION symbols after their section (from the section headers); ld.so never looks at them.
  for (const s of syms.symbols) if (s.type === 'SECTION') s.name = '<section>';
  expect(info.symbols.map((s) => ({
    name: s.type === 3 ? '<section>' : s.name,
    // A defined symbol versioned through verneed (a copy relocation in an executable) is shown with `@`.
    sep: shown(s) === null ? '' : s.defined && !s.hidden && s.versionFile === null ? '@@' : '@',
    version: shown(s),
    defined: s.defined,
    type: TYPE_NAMES[s.type] ?? String(s.type),
    bind: BIND_NAMES[s.binding] ?? String(s.binding),
    vis: VIS_NAMES[s.visibility],
  }))).toEqual(syms.symbols);
  return info;
}
