/**
 * What bin/run.cjs loads before anything else, bundled into one CommonJS file,
 * dist/fast-path.bundle.cjs (scripts/bundle-fast-path.mjs): the last-resort error handler and the
 * start-up fast path. One CommonJS file because Node 20 has no compile cache: resolving some
 * thirty ES modules, and even starting its ES module loader for one, cost more than `use` itself.
 */
export {installLastResort} from './cli/last-resort.js';
export {fastPath} from './fast-path.js';
export {keepCompiledBundle} from './core/self/kept-code.js';
export {phasesRun} from './core/code-phases.js';
export {restoreHeapFlags} from './core/heap-flags.js';
