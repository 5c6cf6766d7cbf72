import {compareDotted} from './version.js';

/**
 * NVIDIA's "CUDA Toolkit and minimum required driver version" table (Linux x86_64), from the
 * CUDA release notes (docs.nvidia.com/cuda/cuda-toolkit-release-notes, table 3) as copied into
 * meson's `_DRIVER_TABLE_VERSION` (mesonbuild/dependencies/cuda.py). Rows are newest first; releases the notes list together
 * (11.4.3/11.4.4) have a row each, and 12.3.2, absent there, shares 12.3.1's driver. A label
 * between rows takes the row at or below it, as meson's lookup does.
 */
const TABLE: ReadonlyArray<readonly [toolkit: string, driver: string]> = [
  ['13.3.1', '610.43.02'], ['13.3.0', '610.43.02'], ['13.2.1', '595.58.03'], ['13.2.0', '595.45.04'],
  ['13.1.1', '590.48.01'], ['13.1.0', '590.44.01'],
  ['13.0.2', '580.95.05'], ['13.0.1', '580.82.07'], ['13.0.0', '580.65.06'],
  ['12.9.1', '575.57.08'], ['12.9.0', '575.51.03'], ['12.8.1', '570.124.06'], ['12.8.0', '570.26'],
  ['12.6.3', '560.35.05'], ['12.6.2', '560.35.03'], ['12.6.1', '560.35.03'], ['12.6.0', '560.28.03'],
  ['12.5.1', '555.42.06'], ['12.5.0', '555.42.02'], ['12.4.1', '550.54.15'], ['12.4.0', '550.54.14'],
  ['12.3.2', '545.23.08'], ['12.3.1', '545.23.08'], ['12.3.0', '545.23.06'],
  ['12.2.2', '535.104.05'], ['12.2.1', '535.86.09'], ['12.2.0', '535.54.03'],
  ['12.1.1', '530.30.02'], ['12.1.0', '530.30.02'], ['12.0.1', '525.85.11'], ['12.0.0', '525.60.13'],
  ['11.8.0', '520.61.05'], ['11.7.1', '515.48.07'], ['11.7.0', '515.43.04'],
  ['11.6.2', '510.47.03'], ['11.6.1', '510.47.03'], ['11.6.0', '510.39.01'],
  ['11.5.2', '495.29.05'], ['11.5.1', '495.29.05'], ['11.5.0', '495.29.05'],
  ['11.4.4', '470.82.01'], ['11.4.3', '470.82.01'], ['11.4.2', '470.57.02'], ['11.4.1', '470.57.02'], ['11.4.0', '470.42.01'],
  ['11.3.1', '465.19.01'], ['11.3.0', '465.19.01'],
  ['11.2.2', '460.32.03'], ['11.2.1', '460.32.03'], ['11.2.0', '460.27.03'],
  ['11.1.1', '455.32'], ['11.1.0', '455.23'],
  ['11.0.3', '450.51.06'], ['11.0.2', '450.51.05'], ['11.0.1', '450.36.06'],
  ['10.2.0', '440.33'], ['10.1.0', '418.39'], ['10.0.0', '410.48'],
];

/**
 * Minor-version compatibility floors: a toolkit of this major runs (with limits) on any
 * driver at or above the floor. 10.x and older have none.
 */
const MVC_FLOOR: Readonly<Record<number, string>> = {11: '450.80.02', 12: '525.60.13', 13: '580.65.06'};

/** Compares driver versions ("550.54.15", "455.32", "418.56") numerically, part by part. */
export function compareDriverVersions(a: string, b: string): number {
  return compareDotted(a, b);
}

/** A driver version as NVIDIA writes them: 2 or 3 numeric parts. */
export function isDriverVersion(text: string): boolean {
  return /^\d{2,4}\.\d{1,4}(\.\d{1,4})?$/.test(text);
}

/** A toolkit label as MAJOR.MINOR or MAJOR.MINOR.PATCH. */
export function parseToolkit(text: string): {major: number; minor: number; patch: number} | undefined {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?$/.exec(text);
  return m ? {major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0)} : undefined;
}

export interface DriverRequirement {
  /** The minimum driver for full support of this toolkit. */
  driver: string;
  /** The table row it came from. */
  row: string;
  /**
   * The toolkit is newer than every row: `driver` is the newest row's minimum, a lower bound
   * (its own minimum is not known; NVIDIA's have only ever risen).
   */
  atLeast?: true;
}

/** Whether a toolkit label is newer than every row of the table (13.3.2, 13.4.0, 14.0 when the table ends at 13.3.1). */
export function newerThanDriverTable(toolkit: string): boolean {
  const v = parseToolkit(toolkit);
  return v !== undefined && compareDotted(`${v.major}.${v.minor}.${v.patch}`, TABLE[0]![0]) > 0;
}

/** Whether a driver is newer than the minimum of the table's newest release: which newer releases it supports fully, the table cannot tell. */
export function driverNewerThanTable(driver: string): boolean {
  return compareDriverVersions(driver, TABLE[0]![1]) > 0;
}

/** The table's newest row: the release and its minimum driver. */
export function driverTableNewest(): {toolkit: string; driver: string} {
  return {toolkit: TABLE[0]![0], driver: TABLE[0]![1]};
}

/** The table's oldest row, for saying what it covers. */
export function driverTableOldest(): string {
  return TABLE.at(-1)![0];
}

/**
 * The minimum driver for a toolkit label (12.4.1, or 12.4 meaning its first release), or
 * undefined when the release is not in the table (older than 10.0, or never released). A
 * release newer than every row gets the newest row's minimum as a lower bound (`atLeast`),
 * never the last row's value taken for its own.
 */
export function minimumDriver(toolkit: string): DriverRequirement | undefined {
  const v = parseToolkit(toolkit);
  if (!v) return undefined;
  if (newerThanDriverTable(toolkit)) return {driver: TABLE[0]![1], row: TABLE[0]![0], atLeast: true};
  for (const [row, driver] of TABLE) {
    const r = parseToolkit(row)!;
    if (r.major === v.major && r.minor === v.minor && r.patch <= v.patch) return {driver, row};
  }
  return undefined;
}

/** The minor-version compatibility floor for a toolkit major, if it has one. */
export function mvcFloor(major: number): string | undefined {
  return MVC_FLOOR[major];
}

/** The newest toolkit release in the table that the driver fully supports. */
export function newestFullySupported(driver: string): string | undefined {
  for (const [row, min] of TABLE) if (compareDriverVersions(driver, min) >= 0) return row;
  return undefined;
}

/** The newest major the driver runs through minor-version compatibility (12 for 535.x). */
export function newestMajorViaMvc(driver: string): number | undefined {
  let best: number | undefined;
  for (const [major, floor] of Object.entries(MVC_FLOOR)) {
    if (compareDriverVersions(driver, floor) >= 0) best = Math.max(best ?? 0, Number(major));
  }
  return best;
}

/** The newest release the table knows, so callers can tell "newer than the table" apart. */
export function newestKnownToolkit(): string {
  return TABLE[0]![0];
}

export type Support =
  | {kind: 'full'; required: DriverRequirement}
  | {kind: 'minor-version-compatibility'; required: DriverRequirement; floor: string}
  | {kind: 'too-old'; required: DriverRequirement; floor?: string}
  /** Not in the table; `required` (atLeast) when the toolkit is newer than every row and the driver meets the newest row's minimum. */
  | {kind: 'unknown'; floor?: string; required?: DriverRequirement};

/** How a driver supports a toolkit release: fully, only through minor-version compatibility, or not. */
export function driverSupport(driver: string, toolkit: string): Support {
  const required = minimumDriver(toolkit);
  const major = parseToolkit(toolkit)?.major;
  const floor = major === undefined ? undefined : mvcFloor(major);
  if (!required) return {kind: 'unknown', floor};
  if (compareDriverVersions(driver, required.driver) >= 0) return required.atLeast ? {kind: 'unknown', floor, required} : {kind: 'full', required};
  if (floor && compareDriverVersions(driver, floor) >= 0) return {kind: 'minor-version-compatibility', required, floor};
  return {kind: 'too-old', required, floor};
}
