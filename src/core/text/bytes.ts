const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/**
 * A byte count for people: 512 B, 1.5 KiB, 48.8 MiB, 150 MiB (no decimal from 100 up). Any
 * number is shown at that precision, fractions of a byte included (a rate: 99.08654590493884 B/s
 * was printed as it came), and a value that rounds up to 1024 is shown in the next unit.
 */
export function formatBytes(n: number): string {
  let v = Number.isFinite(n) && n > 0 ? n : 0;
  let i = 0;
  for (;;) {
    const text = i === 0 ? String(Math.round(v)) : v.toFixed(v >= 99.95 ? 0 : 1);
    if (Number(text) < 1024 || i === UNITS.length - 1) return `${text} ${UNITS[i]}`;
    v /= 1024;
    i++;
  }
}

/** A transfer rate: `formatBytes(bytesPerSecond)/s` (3 B/s, 512 B/s, 1.2 MiB/s). */
export function formatRate(bytesPerSecond: number): string {
  return `${formatBytes(bytesPerSecond)}/s`;
}
