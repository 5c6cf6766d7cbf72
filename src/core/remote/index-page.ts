import {compareLabels} from './labels.js';

/**
 * Release labels offered by a redist index page: NVIDIA serves a plain HTML directory
 * listing with `<a href="redistrib_12.4.1.json">` links; a mirror may serve any page
 * or listing that names the files. Duplicates are dropped; the result is oldest first.
 */
export function parseIndexPage(text: string): string[] {
  const labels = new Set<string>();
  for (const m of text.matchAll(/redistrib_(\d{1,4}(?:\.\d{1,6}){1,4})\.json/g)) labels.add(m[1]!);
  return [...labels].sort(compareLabels);
}
