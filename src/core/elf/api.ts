/**
 * The loader model's light public entry: the report's types and the few pieces of the model
 * that code outside elf/ needs without running a check (splitting LD_LIBRARY_PATH, reading the
 * loader cache, resolving a path inside a sysroot). Importing it loads none of the pipeline, so
 * the shell's switch path and doctor's environment views stay cheap; index.ts is the full entry.
 */
export type {CheckOptions, CheckReport, CheckedObject, NeededEdge, Problem, ProblemKind, Via} from './report-types.js';
export {isFailing} from './report-types.js';
export {splitLdLibraryPath} from './search/search-path.js';
export {DEFAULT_LD_CACHE, loadLdCache} from './read/ldcache/load.js';
export {lookupCache} from './read/ldcache/lookup.js';
export {realpathIn} from './read/machine/sysroot.js';
