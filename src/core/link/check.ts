import {existsSync} from 'node:fs';
import {toolkitLibDir} from '../shell/toolkit-env.js';
import type {LdconfigOptions} from './ldconfig.js';

export interface LinkCheck {
  /** Null when the check could not run. */
  ok: boolean | null;
  line: string;
}

/**
 * The check engine on the linked version's libraries as the rest of the machine sees them:
 * through the link path, with LD_LIBRARY_PATH unset and the loader cache as ldconfig left it.
 * Loaded lazily: it is only needed after a link moved.
 */
export async function checkSystemView(target: string, ld: LdconfigOptions): Promise<LinkCheck> {
  const libDir = toolkitLibDir(target);
  if (!existsSync(libDir)) return {ok: null, line: `check skipped: ${target} has no lib64 or lib directory`};
  const engine = await import('../elf/api.js');
  const report = await engine.checkLibraries({targets: [libDir], ldLibraryPath: undefined, cacheFile: ld.cache});
  return {ok: report.ok, line: engine.firstProblemLine(report)};
}
