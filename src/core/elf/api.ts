/**
 * The loader model's light public entry: the report's types, the few pieces of the model that
 * code outside elf/ needs without running a check (splitting LD_LIBRARY_PATH, reading the loader
 * cache, resolving a path inside a sysroot), and the check's own entries. Importing it loads the
 * reader and the caches but none of the later stages (search, bind, runtime, gpu, explain): a
 * check loads those only when the verdict cache cannot answer a file (check-one.ts), so a cached
 * check, the shell's switch path and doctor's environment views stay cheap. index.ts is the full entry.
 */
export type {CheckOptions, CheckReport, CheckedObject, NeededEdge, Problem, ProblemKind, Via} from './report-types.js';
export {isFailing} from './report-types.js';
export {splitLdLibraryPath} from './search/search-path.js';
export {DEFAULT_LD_CACHE, loadLdCache} from './read/ldcache/load.js';
export {lookupCache} from './read/ldcache/lookup.js';
export {realpathIn} from './read/machine/sysroot.js';
export {checkLibraries, checkWithWheels, firstProblemLine, loaderVariables} from './check.js';
export {parsePageSize, runCheckCli, runCheckText, type CheckCliInput, type CheckCliResult} from './check-cli.js';
export {dynamicProgram} from './search/dynamic-program.js';
