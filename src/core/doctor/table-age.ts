import {driverTableNewest, newerThanDriverTable} from '../versions/driver-table.js';
import {newerThanTable, tableRange} from '../versions/releases.js';

/**
 * How the tables cudaenv carries compare with what a mirror offers: the release table
 * (releases.json, which names toolkits by their components) and the driver table (each
 * release's minimum driver). A release newer than a table is said, never guessed from its last row.
 */
export interface TableAge {
  release_table: {oldest: string; newest: string; newer: string[]};
  driver_table: {newest: string; newer: string[]};
}

export function tableAge(labels: readonly string[]): TableAge {
  const {oldest, newest} = tableRange();
  return {
    release_table: {oldest, newest, newer: labels.filter((l) => newerThanTable(l))},
    driver_table: {newest: driverTableNewest().toolkit, newer: labels.filter((l) => newerThanDriverTable(l))},
  };
}

function span(labels: string[]): string {
  return labels.length === 1 ? `${labels[0]} is` : labels.length === 2 ? `${labels[0]} and ${labels[1]} are` : `${labels.length} releases, ${labels[0]} to ${labels.at(-1)}, are`;
}

/** The notes ls-remote prints: one per table the listed releases outgrow. */
export function tableAgeNotes(age: TableAge): string[] {
  const notes: string[] = [];
  const r = age.release_table;
  if (r.newer.length > 0) {
    notes.push(`${span(r.newer)} newer than cudaenv's release table (${r.oldest} to ${r.newest}): a toolkit of ${r.newer.length === 1 ? 'it' : 'them'} installed without cudaenv is named from this mirror's manifests (cudaenv add reads them)`);
  }
  const d = age.driver_table;
  if (d.newer.length > 0) {
    notes.push(`${span(d.newer)} newer than cudaenv's driver table (to ${d.newest}): their minimum driver is not known to cudaenv (doctor checks them against ${d.newest}'s as a lower bound)`);
  }
  return notes;
}
