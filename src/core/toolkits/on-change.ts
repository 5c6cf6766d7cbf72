import type {StorePaths} from '../store/paths.js';
import {refreshResolveIndex} from '../store/registry.js';
import {rehash} from '../shell/rehash.js';
import {syncSites} from '../shell/site-sync.js';

/**
 * Everything derived from the set of versions is rebuilt here, after any install, uninstall,
 * `add` or alias change: the `resolve/` index (and, with shims, the shims).
 */
export async function afterVersionsChanged(paths: StorePaths): Promise<void> {
  // The user's own versions changed: a site's version of a label the user no longer has comes back, one they now have goes.
  syncSites(paths, process.env, true);
  refreshResolveIndex(paths);
  rehash(paths); // shims and the shell hook's index follow resolve/
}
