import * as core from '@actions/core';
import {formatBytes} from '../core/text/bytes.js';
import {escapeControl} from '../core/text/control.js';

export interface SummaryRow {
  name: string;
  version: string;
  size: number;
  /** mirror, tool cache, or the cache's name. */
  from: string;
}

/**
 * Text for the summary, which GitHub renders as HTML (and Markdown): `&`, `<`, `>`, quotes and
 * the Markdown code quote escaped, control characters made visible. A component's version comes
 * from the mirror's manifest: `<img src=...>` in it must show as text, not load anything.
 */
export function escapeHtml(text: string): string {
  return escapeControl(text).replace(/[&<>"'`]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The step summary: what was installed and from where, the bytes downloaded, the check's line. */
export async function writeSummary(s: {
  version: string; cudaPath: string; source: string; bytesDownloaded: number; rows: SummaryRow[]; notes: string[];
  checkLine?: string; checkOk: boolean;
}): Promise<void> {
  if (!process.env.GITHUB_STEP_SUMMARY) return;
  const how = s.source === 'tool-cache' ? 'already in the runner\'s tool cache' : s.source === 'cache' ? 'archives from the cache' : 'downloaded';
  const summary = core.summary
    .addHeading(`CUDA ${escapeHtml(s.version)}`, 3)
    .addRaw(`Installed in <code>${escapeHtml(s.cudaPath)}</code> (${how}).`, true)
    .addTable([
      [{data: 'component', header: true}, {data: 'version', header: true}, {data: 'archive', header: true}, {data: 'from', header: true}],
      ...s.rows.map((r) => [escapeHtml(r.name), escapeHtml(r.version), formatBytes(r.size), escapeHtml(r.from)]),
    ])
    .addRaw(`Bytes downloaded: ${s.bytesDownloaded} (${formatBytes(s.bytesDownloaded)}).`, true);
  if (s.checkLine) summary.addRaw(`${s.checkOk ? 'OK' : 'FAILED'}: ${escapeHtml(s.checkLine)}`, true);
  for (const note of s.notes) summary.addRaw(escapeHtml(note), true);
  await summary.write();
}
