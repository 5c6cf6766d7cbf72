import {confFilesPointingInto, ldconfigArgv, runLdconfig, type LdconfigOptions} from './ldconfig.js';

export interface LoaderCacheStep {
  /** ld.so.conf files naming a directory under a moved link. */
  files: string[];
  ran: boolean;
  ok: boolean | null;
  /** The command that refreshes the cache (run, planned, or for the user to run). */
  command: string | null;
  /** One line for the user, or null when the cache is not affected. */
  message: string | null;
}

/**
 * After a link moves, cache entries found through ld.so.conf lines under it are stale. As root
 * cudaenv runs ldconfig; otherwise it names the command. `plan` only says what would run.
 */
export function refreshLoaderCache(options: LdconfigOptions, links: string[], mode: 'run' | 'plan' | 'unchanged'): LoaderCacheStep {
  const files = [...new Set(links.flatMap((l) => confFilesPointingInto(options, l)))];
  const argv = ldconfigArgv(options);
  const command = argv.join(' ');
  if (files.length === 0 || mode === 'unchanged') return {files, ran: false, ok: null, command: null, message: null};
  const why = `${files.join(', ')} ${files.length === 1 ? 'names' : 'name'} ${links.join(' and ')}`;
  if (mode === 'plan') return {files, ran: false, ok: null, command, message: `would run ${command} (${why})`};
  if (process.getuid?.() !== 0) {
    return {files, ran: false, ok: null, command: `sudo ${command}`, message: `the loader cache is stale (${why}): run \`sudo ${command}\``};
  }
  const r = runLdconfig(options);
  return {
    files, ran: true, ok: r.ok, command,
    message: r.ok ? `ran ${command} (${why})` : `${command} failed: ${r.message || 'no message'}; run it again by hand`,
  };
}
