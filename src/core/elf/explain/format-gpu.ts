import {basename} from 'node:path';
import type {GpuReport} from '../report-types.js';

/**
 * The GPU part of `check`'s text (issue 33): per GPU, how many libraries carrying device code
 * run on it and how; each library that cannot run, with its fix; libraries that run only partly
 * or only through PTX, in one line each.
 */
export function formatGpu(gpu: GpuReport): string[] {
  const lines: string[] = [];
  const gpus = gpu.gpus.map((g) => `${g.name} (${g.source})`).join(', ');
  if (gpu.gpus.length === 0) return lines;
  lines.push(`GPU code, checked for ${gpus}${gpu.driver ? `, driver ${gpu.driver}` : ''}:`);
  for (const g of gpu.gpus) {
    const verdicts = gpu.libraries.flatMap((l) => l.verdicts.filter((v) => v.gpu === g.capability).map((v) => ({l, v})));
    const count = (k: string) => verdicts.filter(({v}) => v.runs === k).length;
    const n = verdicts.length;
    const failing = count('none') + count('ptx-too-new');
    const parts = [[count('sass'), 'as SASS'], [count('ptx'), 'only through PTX JIT'], [count('partial'), 'partly'], [count('not-judged'), 'not judged']]
      .filter(([k]) => (k as number) > 0).map(([k, w]) => `${k} ${w}`);
    const libraries = (k: number) => `${k} ${k === 1 ? 'library' : 'libraries'}`;
    lines.push(`  ${g.name}: ${n === 0 ? 'no library carries GPU code' : count('not-judged') === n ? `${n === 1 ? 'the library' : `all ${n} libraries`} with GPU code not judged`
      : failing === 0
      ? `${n === 1 ? 'the library with GPU code runs' : `all ${n} libraries with GPU code run`} (${parts.join(', ')})`
      : `${failing} of ${libraries(n)} with GPU code cannot run${parts.length > 0 ? `; the others run: ${parts.join(', ')}` : ''}`}`);
    for (const {l, v} of verdicts) {
      if (v.runs === 'ptx' || v.runs === 'partial') lines.push(`    note: ${basename(l.path)} ${v.note}`);
      // Said, with why: a count of "not judged" alone reads as a pass (issue 42, item 6).
      else if (v.runs === 'not-judged') lines.push(`    note: ${basename(l.path)} is not judged: ${v.note}`);
    }
  }
  for (const l of gpu.libraries) if (l.problem) lines.push(`  warning: ${l.path}: its device code is damaged (${l.problem}); what came before is counted`);
  for (const p of gpu.problems) {
    lines.push(`error: ${p.summary}`);
    lines.push(`  path:     ${p.path}`);
    lines.push(`  fix:      ${p.fix}`);
  }
  return lines;
}
