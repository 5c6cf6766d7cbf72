import * as core from '@actions/core';
import {formatBytes} from '../core/text/bytes.js';

export interface SummaryRow {
  name: string;
  version: string;
  size: number;
  /** mirror, tool cache, or the cache's name. */
  from: string;
}

/** The step summary: what was installed and from where, the bytes downloaded, the check's line. */
export async function writeSummary(s: {
  version: string; cudaPath: string; source: string; bytesDownloaded: number; rows: SummaryRow[]; notes: string[];
  checkLine?: string; checkOk: boolean;
}): Promise<void> {
  if (!process.env.GITHUB_STEP_SUMMARY) return;
  const how = s.source === 'tool-cache' ? 'already in the runner\'s tool cache' : s.source === 'cache' ? 'archives from the cache' : 'downloaded';
  const summary = core.summary
    .addHeading(`CUDA ${s.version}`, 3)
    .addRaw(`Installed in \`${s.cudaPath}\` (${how}).`, true)
    .addTable([
      [{data: 'component', header: true}, {data: 'version', header: true}, {data: 'archive', header: true}, {data: 'from', header: true}],
      ...s.rows.map((r) => [r.name, r.version, formatBytes(r.size), r.from]),
    ])
    .addRaw(`Bytes downloaded: ${s.bytesDownloaded} (${formatBytes(s.bytesDownloaded)}).`, true);
  if (s.checkLine) summary.addRaw(`${s.checkOk ? 'OK' : 'FAILED'}: ${s.checkLine}`, true);
  for (const note of s.notes) summary.addRaw(note, true);
  await summary.write();
}
