/**
 * What to undo if the process dies of something unexpected: an exception no code path
 * caught (a bug, or one in a dependency's event handler). The last-resort handler
 * (src/cli/last-resort.ts) runs these before it exits, so such a death releases the locks the
 * process held and removes its half-built staging directory at once instead of leaving them
 * for the next run. Each action is synchronous (the process is about to exit) and must be
 * safe to run at any moment; the owner unregisters it when it has cleaned up itself.
 * (SIGKILL runs nothing: for that, the next run reclaims what is left: see store/lock.ts and
 * remote/staging.ts.)
 */
// One registry per process, not per module instance: the last-resort handler runs from the
// start-up bundle (dist/fast-path.bundle.cjs, its own copy of this module), while the commands
// oclif loads register from dist/core/fatal-cleanup.js.
const REGISTRY = Symbol.for('cudaenv.fatalCleanups');
const holder = process as unknown as Record<symbol, Set<() => void> | undefined>;
const actions: Set<() => void> = holder[REGISTRY] ??= new Set();

export function onFatalExit(action: () => void): () => void {
  actions.add(action);
  return () => {
    actions.delete(action);
  };
}

/** Runs every registered action once, newest first; an action that fails does not stop the others. */
export function runFatalCleanups(): void {
  const all = [...actions].reverse();
  actions.clear();
  for (const action of all) {
    try {
      action();
    } catch {
      // best effort: the next run reclaims what is left
    }
  }
}
