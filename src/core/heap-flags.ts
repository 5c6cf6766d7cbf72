import {notePhase} from './code-phases.js';

/** The semi-space growth factor of a check that reads files. */
export const YOUNG_GROWTH = 16;
/** V8's own (flag-definitions.h, the same in Node.js 20 to 26). */
const V8_GROWTH = 2;

let grown = false;

/**
 * A check of files keeps nearly all it allocates (each library's tables) to its end, and V8 grew its
 * young generation 1 MB at a time, copying that data through a dozen scavenges (18 in a first check
 * of 473 libraries; 8 when it grows 16-fold, same peak memory: instructions 4.29G -> 4.01G, issue 43).
 * Set only once files must be checked (check.ts sets it at the start of a check without a store):
 * a check the verdict cache answers keeps Node's own sizing (a young generation sized for a long
 * check from the start cost a short one 3-4 ms of page faults). V8 reads the factor at each
 * growth, so setting it while running takes effect.
 */
export function growYoungGenerationFast(): void {
  process.getBuiltinModule('node:v8').setFlagsFromString(`--semi-space-growth-factor=${YOUNG_GROWTH}`);
  grown = true;
  notePhase('model');
}

/**
 * V8's flags as the process started with them. V8 accepts kept code only under the flags it was
 * made with (a hash of every flag that is not its default): bin/run.cjs makes the bundle's code at
 * exit, after a check may have grown the young generation, and the next start has the default.
 */
export function restoreHeapFlags(): void {
  if (!grown) return;
  process.getBuiltinModule('node:v8').setFlagsFromString(`--semi-space-growth-factor=${V8_GROWTH}`);
  grown = false;
}
