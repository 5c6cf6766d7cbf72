import {hookFileName, HOOK_SHELLS, type HookInfo, type HookShell} from './names.js';
import {activateSh, deactivateSh} from './script-sh.js';
import {activateCsh, activateFish, deactivateCsh, deactivateFish} from './script-wrap.js';

export interface HookFile {
  dir: 'activate.d' | 'deactivate.d';
  name: string;
  shell: HookShell;
  content: string;
}

const GENERATORS: Record<HookShell, {activate: (i: HookInfo) => string; deactivate: (i: HookInfo) => string}> = {
  sh: {activate: activateSh, deactivate: deactivateSh},
  fish: {activate: activateFish, deactivate: deactivateFish},
  csh: {activate: activateCsh, deactivate: deactivateCsh},
};

/** The six files of a hook: activate and deactivate, for sh, fish and csh. */
export function hookFiles(info: HookInfo): HookFile[] {
  const files: HookFile[] = [];
  for (const shell of HOOK_SHELLS) {
    files.push({dir: 'activate.d', name: hookFileName(shell), shell, content: GENERATORS[shell].activate(info)});
    files.push({dir: 'deactivate.d', name: hookFileName(shell), shell, content: GENERATORS[shell].deactivate(info)});
  }
  return files;
}
